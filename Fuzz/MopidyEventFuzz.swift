// libFuzzer target: any bytes as a Mopidy WebSocket message: JSON parsing and event decoding must
// give a value or an error, never a crash; what parses must serialize and parse back equal.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard let json = try? JSON.parse(bytes) else { return 0 }
    _ = try? MopidyEvent.decode(json)
    _ = Track(json: json)
    _ = TlTrack(json: json)
    let again = try? JSON.parse(json.serialized())
    precondition(again != nil, "serialized JSON does not parse")
    return 0
}
