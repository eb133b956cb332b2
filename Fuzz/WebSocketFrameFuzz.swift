// libFuzzer target: the WebSocket frame reader must turn any bytes into messages, a protocol
// error or a request for more bytes, and never crash or grow without bound: once failing every
// message over its limit, once reading past messages up to four times that (as Mopidy's events
// are read).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    for reader in [WebSocketFrameReader(messageLimit: 1 << 16), WebSocketFrameReader(messageLimit: 1 << 10, skipLimit: 1 << 12)] {
        read(bytes, with: reader)
    }
    return 0
}

private func read(_ bytes: UnsafeBufferPointer<UInt8>, with fresh: WebSocketFrameReader) {
    var reader = fresh
    let size = bytes.count
    // Feed in two pieces split at a data-chosen point, as a socket would deliver them.
    let cut = size > 0 ? Int(bytes[0]) % (size + 1) : 0
    reader.feed(bytes[0..<cut])
    for part in [bytes[cut...]] {
        do {
            while let m = try reader.next() { _ = m }
        } catch { return }
        reader.feed(part)
    }
    do { while let m = try reader.next() { _ = m } } catch { return }
    precondition(reader.bufferedCount <= size, "reader holds more than it was given")
}
