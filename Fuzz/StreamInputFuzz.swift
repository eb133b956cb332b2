// libFuzzer target: the stream input path before libFLAC: sniffing, Ogg page splitting of any
// bytes fed in pieces, and where the join starts decoding (frame headers, granule positions).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    for type in ["audio/flac", "application/ogg", nil] {
        _ = StreamSniffer.classify(Array(bytes.prefix(8192)), contentType: type, url: "http://127.0.0.1/x")
    }
    var splitter = OggPageSplitter()
    var offset = 0
    var total = 0
    var granules: [Int64] = []
    while offset < bytes.count {
        let n = min(bytes.count - offset, 1 + Int(bytes[offset]) * 7)
        splitter.feed(bytes[offset..<(offset + n)])
        offset += n
        while let page = splitter.next() {
            total += page.bytes.count
            _ = page.checksumValid
            _ = page.frameSampleRate
            granules.append(page.granule)
        }
    }
    precondition(total + splitter.skippedBytes <= bytes.count, "pages hold more than was fed")
    let keep = Int64(bytes.first ?? 0) * 100
    let cut = BurstSkip.oggStart(granules: granules, keepSamples: keep)
    precondition(cut.index >= 0 && cut.index <= granules.count, "the Ogg start is outside the pages")
    if let start = BurstSkip.nativeStart(bytes, keepMs: Int(bytes.last ?? 0)) {
        precondition(start.offset > 0 && start.offset < bytes.count, "the native start is outside the bytes")
    }
    return 0
}
