/// Tells what a stream is from its first bytes and its Content-Type, and splits Ogg into pages so
/// that a new chained logical stream can restart the decoder. Pure: unit-tested and fuzzed.

public enum StreamSniffer {
    public enum Kind: Equatable, Sendable {
        case nativeFLAC
        case oggFLAC
    }

    public struct NotFLAC: Error, Equatable, Sendable, CustomStringConvertible {
        public let url: String
        public let contentType: String?
        public let start: String
        public var description: String {
            "stream at \(url) is not FLAC (Content-Type \(contentType ?? "none"), starts with \"\(start)\")"
        }
    }

    /// How many bytes `classify` wants before it decides (fewer at the end of a short stream).
    public static let wantedBytes = 8192

    /// `fLaC` → native FLAC; `OggS` (or an Ogg page further in) → Ogg; a FLAC frame sync code
    /// with a FLAC Content-Type → native FLAC joined mid-stream (Icecast keeps no header for
    /// native FLAC mounts, so a late joiner starts at an arbitrary byte). Anything else, such as
    /// an HTML login page, is an error that names the URL and the Content-Type.
    public static func classify(_ head: [UInt8], contentType: String?, url: String) -> Result<Kind, NotFLAC> {
        let type = Array((contentType ?? "").lowercased().utf8)
        func typeSays(_ word: String) -> Bool { find(Array(word.utf8), in: type) != nil }
        if head.starts(with: Array("fLaC".utf8)) { return .success(.nativeFLAC) }
        if head.starts(with: Array("OggS".utf8)) { return .success(.oggFLAC) }
        let flacType = typeSays("flac") && !typeSays("ogg")
        let oggType = typeSays("ogg")
        if oggType, find(Array("OggS".utf8), in: head) != nil { return .success(.oggFLAC) }
        if flacType || type.isEmpty || typeSays("octet-stream") {
            // Declared FLAC: one frame header is evidence enough; otherwise two.
            if find(Array("fLaC".utf8), in: head) != nil || hasFrameSync(head, needed: flacType ? 1 : 2) {
                return .success(.nativeFLAC)
            }
        }
        let printable = String(decoding: head.prefix(24).map { $0 >= 0x20 && $0 < 0x7F ? $0 : UInt8(ascii: ".") }, as: UTF8.self)
        return .failure(NotFLAC(url: url, contentType: contentType, start: printable))
    }

    /// A FLAC frame header: sync 0b11111111_1111100x, then a block size code that is not the
    /// reserved 0 and a sample rate code that is not the invalid 15, `needed` times (one match in
    /// random bytes is common enough when nothing else says FLAC).
    static func hasFrameSync(_ b: [UInt8], needed: Int = 2) -> Bool {
        var hits = 0
        var i = 0
        while i + 3 < b.count {
            if b[i] == 0xFF && (b[i + 1] & 0xFE) == 0xF8 && (b[i + 2] >> 4) != 0 && (b[i + 2] & 0x0F) != 0x0F {
                hits += 1
                if hits >= needed { return true }
            }
            i += 1
        }
        return false
    }

    static func find(_ needle: [UInt8], in hay: [UInt8]) -> Int? {
        guard hay.count >= needle.count else { return nil }
        for i in 0...(hay.count - needle.count) where hay[i] == needle[0] {
            if Array(hay[i..<(i + needle.count)]) == needle { return i }
        }
        return nil
    }
}

/// One Ogg page, as bytes plus what the splitter needs from its header.
public struct OggPage: Equatable, Sendable {
    public let bytes: [UInt8]
    public let serial: UInt32
    public let beginsStream: Bool

    /// The page checksum (CRC-32, polynomial 0x04C11DB7, over the page with its CRC field zeroed)
    /// matches: a corrupt page is dropped (as libogg would do silently) and counted.
    public var checksumValid: Bool {
        guard bytes.count >= 27 else { return false }
        let stored = UInt32(bytes[22]) | UInt32(bytes[23]) << 8 | UInt32(bytes[24]) << 16 | UInt32(bytes[25]) << 24
        return bytes.withUnsafeBufferPointer { b in
            oggCRCTables.withUnsafeBufferPointer { t in
                // The header to its CRC field, the field as four zero bytes, then the rest four
                // bytes at a time (slicing by 4).
                var crc: UInt32 = 0
                func one(_ v: UInt8) { crc = (crc << 8) ^ t[Int((crc >> 24) ^ UInt32(v))] }
                for i in 0..<22 { one(b[i]) }
                for _ in 0..<4 { one(0) }
                var i = 26
                while i + 4 <= b.count {
                    let v = crc ^ (UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3]))
                    crc = t[768 + Int(v >> 24)] ^ t[512 + Int((v >> 16) & 0xFF)] ^ t[256 + Int((v >> 8) & 0xFF)] ^ t[Int(v & 0xFF)]
                    i += 4
                }
                while i < b.count {
                    one(b[i])
                    i += 1
                }
                return crc == stored
            }
        }
    }
}

extension OggPage {
    /// The page sequence number (RFC 3533): one more on each page of a logical stream.
    public var sequence: UInt32 {
        guard bytes.count >= 22 else { return 0 }
        return UInt32(bytes[18]) | UInt32(bytes[19]) << 8 | UInt32(bytes[20]) << 16 | UInt32(bytes[21]) << 24
    }

    /// The page goes on with a packet begun on the page before.
    public var continued: Bool { bytes.count > 5 && bytes[5] & 0x01 != 0 }
}

/// The Ogg CRC's tables (polynomial 0x04C11DB7, MSB first): the byte table, then each of the
/// three after it a byte further on, for four bytes at a time.
private let oggCRCTables: [UInt32] = {
    var t = (0..<256).map { i -> UInt32 in
        var r = UInt32(i) << 24
        for _ in 0..<8 { r = r & 0x8000_0000 != 0 ? (r << 1) ^ 0x04C1_1DB7 : r << 1 }
        return r
    }
    for k in 1..<4 { t += (0..<256).map { i in (t[256 * (k - 1) + i] << 8) ^ t[Int(t[256 * (k - 1) + i] >> 24)] } }
    return t
}()

extension OggPage {
    /// Splits a byte stream into Ogg pages (RFC 3533 §6), resyncing on the capture pattern after
    /// garbage. Bounded: a page is at most 27 + 255 + 255·255 bytes.
    public struct Splitter: Sendable {
        /// Bytes fed and not yet split, from `head` on: pages are taken by moving `head`, and
        /// what lies before it goes once it is large, so that a big feed splits in linear time.
        private var buffer: [UInt8] = []
        private var head = 0
        public private(set) var skippedBytes = 0

        public init() {}

        public mutating func feed<C: Collection>(_ bytes: C) where C.Element == UInt8 {
            if head > 0 && (head == buffer.count || head >= 64 * 1024) {
                buffer.removeFirst(head)
                head = 0
            }
            buffer.append(contentsOf: bytes)
        }

        /// The next whole page, or nil when more bytes are needed.
        public mutating func next() -> OggPage? {
            while true {
                let h = head
                guard buffer.count - h >= 27 else { return nil }
                if !(buffer[h] == 0x4F && buffer[h + 1] == 0x67 && buffer[h + 2] == 0x67 && buffer[h + 3] == 0x53 && buffer[h + 4] == 0) {
                    // Not at a page: drop up to the next capture pattern.
                    var i = h + 1
                    while i + 3 < buffer.count && !(buffer[i] == 0x4F && buffer[i + 1] == 0x67 && buffer[i + 2] == 0x67 && buffer[i + 3] == 0x53) { i += 1 }
                    let drop = min(i - h, buffer.count - h - 3)
                    skippedBytes += drop
                    head += drop
                    continue
                }
                let segments = Int(buffer[h + 26])
                guard buffer.count - h >= 27 + segments else { return nil }
                var body = 0
                for k in 0..<segments { body += Int(buffer[h + 27 + k]) }
                let total = 27 + segments + body
                guard buffer.count - h >= total else { return nil }
                let serial = UInt32(buffer[h + 14]) | UInt32(buffer[h + 15]) << 8 | UInt32(buffer[h + 16]) << 16 | UInt32(buffer[h + 17]) << 24
                let page = OggPage(bytes: Array(buffer[h..<h + total]), serial: serial, beginsStream: buffer[h + 5] & 0x02 != 0)
                head += total
                return page
            }
        }
    }
}
