// libFuzzer target: the stream input path before libFLAC: sniffing and Ogg page splitting of any
// bytes, fed in pieces.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    for type in ["audio/flac", "application/ogg", nil] {
        _ = StreamSniffer.classify(Array(bytes.prefix(8192)), contentType: type, url: "http://127.0.0.1/x")
    }
    var splitter = OggPageSplitter()
    var offset = 0
    var total = 0
    while offset < bytes.count {
        let n = min(bytes.count - offset, 1 + Int(bytes[offset]) * 7)
        splitter.feed(bytes[offset..<(offset + n)])
        offset += n
        while let page = splitter.next() {
            total += page.bytes.count
            _ = page.checksumValid
        }
    }
    precondition(total + splitter.skippedBytes <= bytes.count, "pages hold more than was fed")
    return 0
}
