// libFuzzer target: the WebSocket frame reader must turn any bytes into messages, a protocol
// error or a request for more bytes, and never crash or grow without bound.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    var reader = WebSocketFrameReader(messageLimit: 1 << 16)
    // Feed in two pieces split at a data-chosen point, as a socket would deliver them.
    let cut = size > 0 ? Int(bytes[0]) % (size + 1) : 0
    reader.feed(bytes[0..<cut])
    for part in [bytes[cut...]] {
        do {
            while let m = try reader.next() { _ = m }
        } catch { return 0 }
        reader.feed(part)
    }
    do { while let m = try reader.next() { _ = m } } catch { return 0 }
    precondition(reader.bufferedCount <= size, "reader holds more than it was given")
    return 0
}
