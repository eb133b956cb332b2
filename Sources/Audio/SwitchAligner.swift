/// Lines a second connection to the same mount up with what the first one plays, by stream
/// position (the first sample number in each FLAC frame header, the same on every connection and
/// through a proxy), before libFLAC sees a byte of it: where to start decoding it so that its
/// first frame is the one the first connection would play next. Holds the second connection's
/// bytes meanwhile, bounded. Pure: fed bytes, asked about a position; unit-tested.
public struct SwitchAligner {
    public enum Verdict: Equatable {
        /// The position is not in what is held yet (the connection is still coming, or its
        /// oldest audio is still ahead of what plays): ask again at the next frame.
        case wait
        /// Decode these bytes (the stream's header pages for Ogg, then from the page or frame
        /// where the position starts, to the end of what is held), then the rest of the ring.
        case ready(prefix: [UInt8])
        /// The two connections cannot be lined up (another stream, a restarted encoder, another
        /// rate, more held than allowed): why, for the log.
        case impossible(String)
    }

    /// Where a FLAC frame starts in what is held: for Ogg, the start of the page on which the
    /// first frame that begins on it begins; for native FLAC, the frame's own header.
    struct Start: Equatable {
        var offset: Int
        var sample: Int64
        var blockSize: Int
        var sampleRate: Int
        /// Where the audio known whole from here ends: for Ogg, the page's granule position (the
        /// end of the last frame it completes; `sample` when it completes none); for native
        /// FLAC, the frame's end.
        var end: Int64
    }

    public let ogg: Bool
    /// What may be held, bytes.
    public let maxBytes: Int
    /// How far apart (samples) the positions may lie before they are taken for different streams.
    public let maxApartSamples: Int64
    /// Everything fed so far: the fallback plays it as a fresh connection's start.
    public private(set) var bytes: [UInt8] = []
    private(set) var starts: [Start] = []
    /// Ogg: the header pages before the first audio page (bytes[0..<headerEnd]); nil before
    /// they are complete.
    private var headerEnd: Int? = nil
    private var scanned = 0
    private var problem: String? = nil

    public init(ogg: Bool, maxBytes: Int, maxApartSamples: Int64) {
        self.ogg = ogg
        self.maxBytes = maxBytes
        self.maxApartSamples = maxApartSamples
    }

    public mutating func feed<C: Collection>(_ more: C) where C.Element == UInt8 {
        bytes.append(contentsOf: more)
        if bytes.count > maxBytes && problem == nil {
            problem = "held \(bytes.count / 1024) KB of the new connection without reaching what plays"
        }
        if ogg { scanPages() } else { scanFrames() }
    }

    /// Where to start so that the first frame decoded at or after `sample` begins at `sample`;
    /// `sampleRate`: what plays (another rate is another stream).
    public func verdict(at sample: Int64, sampleRate: Int) -> Verdict {
        if let problem { return .impossible(problem) }
        guard let oldest = starts.first, let newest = starts.last else { return .wait }
        if let other = starts.first(where: { $0.sampleRate > 0 && $0.sampleRate != sampleRate }) {
            return .impossible("the new connection plays at \(other.sampleRate) Hz, this one at \(sampleRate) Hz")
        }
        if oldest.sample.subtractingReportingOverflow(sample).partialValue > maxApartSamples
            || sample.subtractingReportingOverflow(newest.sample).partialValue > maxApartSamples {
            return .impossible("the new connection is at sample \(oldest.sample)…\(newest.sample), what plays at \(sample): not the same stream (an encoder restarted?)")
        }
        guard let k = starts.lastIndex(where: { $0.sample <= sample }) else { return .wait }
        if ogg {
            // The page on which the frame at the position begins, and that frame whole: the page
            // completes it (the granule lies beyond) or a later page begins.
            guard k + 1 < starts.count || sample < starts[k].end else { return .wait }
            guard let headerEnd else { return .impossible("the new connection sent no stream headers") }
            return .ready(prefix: Array(bytes[0..<headerEnd]) + bytes[starts[k].offset...])
        }
        // The frame at the position, and a later one (a false sync has none; its frame is whole).
        guard k + 1 < starts.count else { return .wait }
        let s = starts[k]
        guard s.sample == sample else {
            return .impossible("the new connection's frames do not begin at sample \(sample) (one begins at \(s.sample))")
        }
        return .ready(prefix: Array(bytes[s.offset...]))
    }

    // MARK: - Native FLAC

    private var headers: [BurstSkip.FrameHeader] = []

    /// Frame headers whose successor (the header at the next sample number) is held too: a false
    /// sync inside audio has none.
    private mutating func scanFrames() {
        // A header needs up to 16 bytes: nearer the end it may be incomplete, and is read later.
        while scanned + 16 <= bytes.count {
            if let h = BurstSkip.frameHeader(bytes, at: scanned) {
                headers.append(h)
                scanned += 6
            } else {
                scanned += 1
            }
        }
        // Few headers per second: looked at afresh each time.
        starts = headers.enumerated().compactMap { j, h in
            let next = h.firstSample + Int64(h.blockSize)
            guard headers[(j + 1)...].prefix(8).contains(where: { $0.firstSample == next }) else { return nil }
            return Start(offset: h.offset, sample: h.firstSample, blockSize: h.blockSize, sampleRate: h.sampleRate, end: next)
        }
    }

    // MARK: - Ogg FLAC

    private mutating func scanPages() {
        while scanned < bytes.count {
            guard bytes.count - scanned >= 27 else { return }
            guard bytes[scanned] == 0x4F, bytes[scanned + 1] == 0x67, bytes[scanned + 2] == 0x67, bytes[scanned + 3] == 0x53 else {
                scanned += 1  // not a page here (a corrupt stretch): the next capture pattern
                continue
            }
            let segments = Int(bytes[scanned + 26])
            guard bytes.count - scanned >= 27 + segments else { return }
            var length = 27 + segments
            for k in 0..<segments { length += Int(bytes[scanned + 27 + k]) }
            guard bytes.count - scanned >= length else { return }
            let b = Array(bytes[scanned..<(scanned + length)])
            let page = OggPage(bytes: b, serial: 0, beginsStream: b[5] & 0x02 != 0)
            defer { scanned += length }
            guard page.checksumValid else { continue }
            if page.granule == 0 || page.beginsStream {
                if starts.isEmpty { headerEnd = scanned + length }
                continue
            }
            guard let h = page.firstFrame else { continue }
            starts.append(Start(offset: scanned, sample: h.firstSample, blockSize: h.blockSize, sampleRate: h.sampleRate,
                                end: max(h.firstSample, page.granule)))
        }
    }
}

extension OggPage {
    /// The header of the first FLAC frame that begins on this page (after the end of a packet
    /// continued from the page before), or nil (none begins here, or its header runs over).
    var firstFrame: BurstSkip.FrameHeader? {
        guard bytes.count >= 27 else { return nil }
        let segments = Int(bytes[26])
        guard bytes.count >= 27 + segments else { return nil }
        var offset = 27 + segments
        var k = 0
        if bytes[5] & 0x01 != 0 {
            // Skip the continued packet: up to and including its first lacing value below 255.
            while k < segments {
                let lace = Int(bytes[27 + k])
                offset += lace
                k += 1
                if lace < 255 { break }
            }
        }
        guard k < segments, offset < bytes.count else { return nil }
        return BurstSkip.frameHeader(Array(bytes[offset..<min(bytes.count, offset + 16)]), at: 0)
    }
}
