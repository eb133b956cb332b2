// libFuzzer target: any bytes as a Mopidy WebSocket message: JSON parsing and event decoding must
// give a value or an error, never a crash; what parses must serialize and parse back, and parse
// with its lists cut short too.
// Numbers outside `ServerRange` are logged; the fuzzer keeps only errors, or it would spend its
// time writing lines.
private let quiet: Void = Log.setLevel(.error)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    _ = quiet
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    // What is not built is checked as strictly as what is: the same texts parse either way.
    let cut = try? JSON.parse(bytes, maxArrayElements: 1)
    guard let json = try? JSON.parse(bytes) else {
        precondition(cut == nil, "a text that does not parse whole parses with its lists cut")
        return 0
    }
    precondition(cut != nil, "a text that parses whole does not parse with its lists cut")
    _ = try? JSON.parse(bytes, maxTreeBytes: 512)
    _ = try? MopidyEvent.decode(json)
    _ = Track(json: json)
    _ = TlTrack(json: json)
    _ = Image.list(json, for: "x")
    let again = try? JSON.parse(json.serialized())
    precondition(again != nil, "serialized JSON does not parse")
    return 0
}
