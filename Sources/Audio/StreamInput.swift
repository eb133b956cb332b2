import Support

/// What the input asks of the output while Icecast's connect burst may still be coming.
protocol BurstWatcher: AnyObject {
    /// The output still holds the join buffer: reads wait only `burstGapMs` for bytes.
    var joining: Bool { get }
    /// No byte came for `burstGapMs`: the burst may be over.
    func burstPaused()
    /// The input is about to wait for bytes: what is decoded should go out first.
    func inputWaits()
}

/// Bytes from the ring to libFLAC, on the decoder thread: the sniffed start first; Ogg page by
/// page, ending the decoder at the start of a new chained logical stream. Also tells when the
/// bytes being decoded arrived, for the heard delay. Not thread-safe.
final class StreamInput {
    /// The start of a connection's bytes and what they are.
    struct Start {
        var head: [UInt8]
        var kind: Result<StreamKind, NotFLACError>
        /// When the first byte was read (monotonic ms): the join is timed from it.
        var firstByteMs: Int
    }

    /// Waits for the first bytes and tells what they are; nil when the connection ended first.
    /// The magic bytes decide at once; an inconclusive start (a native mount joined mid-stream,
    /// quiet audio compresses to little) gets up to `sniffWaitMs` to show its frames.
    static func sniff(_ c: StreamConnection) -> Start? {
        var head = [UInt8](repeating: 0, count: StreamTuning.sniffBytes)
        var have = 0
        var firstByteMs = 0
        while have < head.count {
            let r = head.withUnsafeMutableBytes { buf in
                c.ring.read(into: UnsafeMutableRawBufferPointer(rebasing: buf[have...]),
                            deadlineMs: have == 0 ? nil : firstByteMs + StreamTuning.sniffWaitMs)
            }
            guard case .bytes(let n) = r else { break }
            if have == 0 { firstByteMs = monotonicMs() }
            have += n
            if case .success = StreamSniffer.classify(Array(head[0..<have]), contentType: c.contentType, url: c.url) { break }
        }
        head.removeLast(head.count - have)
        guard !c.ring.isCancelled, have > 0 else { return nil }
        return Start(head: head, kind: StreamSniffer.classify(head, contentType: c.contentType, url: c.url),
                     firstByteMs: firstByteMs)
    }

    private let ring: ByteRing
    private let loop: AudioLoop
    private let kind: StreamKind
    private let stats: StreamStats
    /// Set by the player once the output exists; held strongly (the output holds no input).
    var burst: BurstWatcher? = nil
    private var prefix: [UInt8]
    private var prefixOffset = 0
    private var splitter = OggPageSplitter()
    private var page: [UInt8] = []
    private var pageOffset = 0
    private var serial: UInt32? = nil
    /// The current decoder reached the first page of a new chained logical stream.
    private var chainBoundary = false
    private var pendingPage: (page: OggPage, arrivalMs: Int)? = nil
    private var scratch = [UInt8](repeating: 0, count: StreamTuning.oggReadBytes)
    /// When the bytes handed to libFLAC last arrived: for Ogg, when the page being decoded was
    /// complete; for native FLAC, when the last byte read arrived. Never earlier than the
    /// truth, so each frame gives an upper bound on when it could have arrived.
    private(set) var arrivalMs: Int
    private var readArrivalMs: Int

    init(ring: ByteRing, loop: AudioLoop, prefix: [UInt8], kind: StreamKind, stats: StreamStats) {
        self.ring = ring
        self.loop = loop
        self.prefix = prefix
        self.kind = kind
        self.stats = stats
        arrivalMs = ring.lastReadArrivalMs
        readArrivalMs = arrivalMs
        if kind == .oggFLAC {
            splitter.feed(prefix)
            self.prefix = []
        }
    }

    /// After a decoder ended: true when it ended at a new chained logical stream, whose first
    /// page the next decoder gets.
    func startNextChain() -> Bool {
        defer { chainBoundary = false }
        return chainBoundary
    }

    /// libFLAC's read callback.
    func read(into buf: UnsafeMutableRawBufferPointer) -> DecoderInput {
        if kind == .nativeFLAC {
            if prefixOffset < prefix.count {
                let n = copy(prefix, from: prefixOffset, into: buf)
                prefixOffset += n
                return .bytes(n)
            }
            let r = fromRing(into: buf)
            if case .bytes = r { arrivalMs = ring.lastReadArrivalMs }
            return r
        }
        while pageOffset >= page.count {
            if chainBoundary { return .end }
            let next: OggPage
            if let p = pendingPage {
                next = p.page
                arrivalMs = p.arrivalMs
                pendingPage = nil
            } else if let p = splitter.next() {
                next = p
                arrivalMs = readArrivalMs
            } else {
                let r = scratch.withUnsafeMutableBytes { fromRing(into: $0) }
                guard case .bytes(let n) = r else { return r }
                readArrivalMs = ring.lastReadArrivalMs
                splitter.feed(scratch[0..<n])
                continue
            }
            if !next.checksumValid {
                stats.lostSync()
                continue
            }
            if next.beginsStream, let current = serial, current != next.serial {
                // Hand this page to the next decoder instance.
                pendingPage = (next, arrivalMs)
                serial = nil
                chainBoundary = true
                return .end
            }
            serial = next.serial
            page = next.bytes
            pageOffset = 0
        }
        let n = copy(page, from: pageOffset, into: buf)
        pageOffset += n
        return .bytes(n)
    }

    private func copy(_ bytes: [UInt8], from offset: Int, into buf: UnsafeMutableRawBufferPointer) -> Int {
        let n = min(buf.count, bytes.count - offset)
        bytes.withUnsafeBytes { buf.baseAddress!.copyMemory(from: $0.baseAddress! + offset, byteCount: n) }
        return n
    }

    /// While the output joins, waits at most `burstGapMs`: a pause in the data means Icecast's
    /// burst is over. Waits in the audio loop, so the sound server's messages are handled
    /// meanwhile.
    private func fromRing(into buf: UnsafeMutableRawBufferPointer) -> DecoderInput {
        while true {
            let deadline = burst?.joining == true ? monotonicMs() + StreamTuning.burstGapMs : nil
            let r = ring.read(into: buf, deadlineMs: deadline, waitingWith: { [burst, loop] deadline in
                burst?.inputWaits()
                loop.wait(deadlineMs: deadline)
            })
            switch r {
            case .bytes(let n): return .bytes(n)
            case .ended: return .end
            case .timedOut: burst?.burstPaused()
            }
        }
    }
}
