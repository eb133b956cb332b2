/// Where to start decoding Icecast's connect burst so that only its newest `keep` of audio is
/// decoded: positions are read from the bytes themselves (Ogg pages' granule positions, native
/// FLAC frame headers' sample numbers), not by decoding what is then dropped. Pure: unit-tested
/// and fuzzed with the stream input.
public enum BurstSkip {
    /// A FLAC frame header (RFC 9639 §9.1) whose CRC-8 matched.
    public struct FrameHeader: Equatable, Sendable {
        /// Byte offset of the sync code.
        public var offset: Int
        /// The frame's first sample (fixed block size: frame number × block size).
        public var firstSample: Int64
        public var blockSize: Int
        /// 0 when the header defers to STREAMINFO.
        public var sampleRate: Int
    }

    /// The header of a frame starting at `b[i]`, or nil (not a sync code, a reserved value, or a
    /// CRC-8 mismatch: random bytes pass all of that about once in 2^30 positions).
    public static func frameHeader(_ b: [UInt8], at i: Int) -> FrameHeader? {
        guard i + 5 < b.count, b[i] == 0xFF, b[i + 1] & 0xFE == 0xF8 else { return nil }
        let variable = b[i + 1] & 1 == 1
        let sizeCode = Int(b[i + 2] >> 4), rateCode = Int(b[i + 2] & 0x0F)
        guard sizeCode != 0, rateCode != 15, b[i + 3] & 1 == 0, (b[i + 3] >> 1) & 7 != 3, b[i + 3] >> 4 < 11 else { return nil }
        // The coded number: UTF-8-like, up to 7 bytes.
        var p = i + 4
        let lead = b[p]
        guard lead != 0xFF else { return nil }
        var extra = 0
        while extra < 7 && lead & (0x80 >> UInt8(extra)) != 0 { extra += 1 }
        guard extra != 1, extra <= (variable ? 7 : 6) else { return nil }
        var number = Int64(extra == 0 ? lead : lead & (0xFF >> UInt8(extra + 1)))
        let more = extra == 0 ? 0 : extra - 1
        guard p + more < b.count else { return nil }
        for k in 0..<more {
            let c = b[p + 1 + k]
            guard c & 0xC0 == 0x80 else { return nil }
            number = number << 6 | Int64(c & 0x3F)
        }
        p += 1 + more
        var blockSize: Int
        switch sizeCode {
        case 1: blockSize = 192
        case 2...5: blockSize = 576 << (sizeCode - 2)
        case 6, 7:
            let n = sizeCode == 6 ? 1 : 2
            guard p + n <= b.count else { return nil }
            blockSize = (n == 1 ? Int(b[p]) : Int(b[p]) << 8 | Int(b[p + 1])) + 1
            p += n
        default: blockSize = 256 << (sizeCode - 8)
        }
        let rates = [0, 88200, 176400, 192000, 8000, 16000, 22050, 24000, 32000, 44100, 48000, 96000]
        var rate = rateCode < 12 ? rates[rateCode] : 0
        if rateCode >= 12 {
            let n = rateCode == 12 ? 1 : 2
            guard p + n <= b.count else { return nil }
            let v = n == 1 ? Int(b[p]) : Int(b[p]) << 8 | Int(b[p + 1])
            rate = rateCode == 12 ? v * 1000 : rateCode == 13 ? v : v * 10
            p += n
        }
        guard p < b.count, crc8(b, i, p) == b[p] else { return nil }
        return FrameHeader(offset: i, firstSample: variable ? number : number * Int64(blockSize),
                           blockSize: blockSize, sampleRate: rate)
    }

    /// Every frame header in `b`, each after the previous one's header.
    public static func frameHeaders(_ b: [UInt8]) -> [FrameHeader] {
        var out: [FrameHeader] = []
        var i = 0
        while i + 5 < b.count {
            if let h = frameHeader(b, at: i) {
                out.append(h)
                i += 6
            } else {
                i += 1
            }
        }
        return out
    }

    /// Native FLAC: the offset to decode from so that the newest `keepMs` (at least) of whole
    /// frames is decoded,
    /// and how many samples lie before it; nil to decode everything (no frame, an unknown rate,
    /// or too little audio). Only a run of headers whose sample numbers follow each other counts,
    /// so a false sync inside audio cannot move the start.
    public static func nativeStart(_ b: [UInt8], keepMs: Int) -> (offset: Int, skippedSamples: Int64)? {
        let headers = frameHeaders(b)
        guard let newest = headers.last, newest.sampleRate > 0 else { return nil }
        // The run of frames that end where the next one begins, newest first; a header that
        // does not fit the run is a false sync and is passed over.
        var run = [newest]
        for h in headers.dropLast().reversed() where h.firstSample + Int64(h.blockSize) == run[run.count - 1].firstSample {
            run.append(h)
        }
        let keep = Int64(keepMs) * Int64(newest.sampleRate) / 1000
        // The newest frame may still be arriving: count only the frames before it.
        let end = newest.firstSample
        guard let start = run.first(where: { end - $0.firstSample >= keep }), start.offset > 0 else { return nil }
        return (start.offset, start.firstSample - run[run.count - 1].firstSample)
    }

    /// Ogg FLAC: of pages with these granule positions (the end sample of the last packet that
    /// ends on each; −1: none ends there), the first to decode so that the newest `keepSamples`
    /// (at least) is decoded, and how many samples the pages before it end after the first
    /// page's end (the first page's own length is not known without decoding it). A page that
    /// ends no packet goes with the page that ends its packet.
    public static func oggStart(granules: [Int64], keepSamples: Int64) -> (index: Int, skippedSamples: Int64) {
        guard let newest = granules.last(where: { $0 >= 0 }), let first = granules.first(where: { $0 >= 0 }) else {
            return (0, 0)
        }
        // Start after the last page whose end is at least `keepSamples` before the newest end.
        guard let cut = granules.lastIndex(where: { $0 >= 0 && newest - $0 >= keepSamples }) else { return (0, 0) }
        return (cut + 1, granules[cut] - first)
    }

    /// CRC-8, polynomial x^8 + x^2 + x + 1, over `b[from..<to]`.
    static func crc8(_ b: [UInt8], _ from: Int, _ to: Int) -> UInt8 {
        var crc: UInt8 = 0
        for k in from..<to {
            crc ^= b[k]
            for _ in 0..<8 { crc = crc & 0x80 != 0 ? (crc << 1) ^ 0x07 : crc << 1 }
        }
        return crc
    }
}

extension OggPage {
    /// The granule position: for FLAC, the last sample of the last packet that ends on this
    /// page (−1: no packet ends here; 0 on the header pages).
    public var granule: Int64 {
        guard bytes.count >= 14 else { return -1 }
        var g: UInt64 = 0
        for k in (6..<14).reversed() { g = g << 8 | UInt64(bytes[k]) }
        return Int64(bitPattern: g)
    }

    /// The sample rate from the FLAC frame header that begins this page's first packet (0 if it
    /// does not begin with one: a header page, or a packet continued from the page before).
    public var frameSampleRate: Int {
        guard bytes.count > 27, bytes[5] & 0x01 == 0 else { return 0 }
        let start = 27 + Int(bytes[26])
        guard start < bytes.count else { return 0 }
        return BurstSkip.frameHeader(Array(bytes[start..<min(bytes.count, start + 16)]), at: 0)?.sampleRate ?? 0
    }
}
