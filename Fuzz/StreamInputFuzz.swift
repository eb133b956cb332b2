// libFuzzer target: the stream input path before libFLAC: sniffing, Ogg page splitting and the
// cutting of any bytes, fed in pieces, into FLAC units (FrameReader), native and Ogg.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    for type in ["audio/flac", "application/ogg", nil] {
        _ = StreamSniffer.classify(Array(bytes.prefix(8192)), contentType: type, url: "http://127.0.0.1/x")
    }
    for ogg in [false, true] {
        var reader = FrameReader(ogg: ogg)
        var offset = 0, out = 0, frames: [FrameReader.Header] = []
        while offset < bytes.count {
            let n = min(bytes.count - offset, 1 + Int(bytes[offset]) * 7)
            reader.feed(bytes[offset..<(offset + n)], arrival: Instant(ms: offset))
            offset += n
            while let u = reader.next() {
                out += u.bytes.count
                if let h = u.header { frames.append(h) }
                precondition(u.bytes.count <= FrameReader.maxUnitBytes + 65_536, "a unit beyond the bound")
            }
        }
        reader.finish()
        while let u = reader.next() { out += u.bytes.count }
        // Native units are the bytes themselves (less what came before the first frame); Ogg
        // units are packets, less than the pages.
        precondition(out <= bytes.count, "units hold more than was fed")
        _ = frames
    }
    return 0
}
