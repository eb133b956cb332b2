import Support

/// What the input asks of the output while Icecast's connect burst may still be coming.
protocol BurstWatcher: AnyObject {
    /// The output still holds the join buffer: reads wait only `burstGapMs` for bytes.
    var joining: Bool { get }
    /// No byte came for `burstGapMs`: the burst may be over.
    func burstPaused()
    /// The input is about to wait for bytes: what is decoded should go out first.
    func inputWaits()
    /// A time the waits must end at for the output to look again (the end of a warm pause),
    /// reported as `burstPaused`.
    var wakeAtMs: Int? { get }
}

/// Bytes from the ring to libFLAC, on the decoder thread: the sniffed start first; Ogg page by
/// page, unwrapped to native FLAC (libFLAC's own Ogg reader waits to fill its whole buffer, which
/// in silence, pages of 100 bytes every half second, takes a minute), ending the decoder at the
/// start of a new chained logical stream. Also tells when the
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

    let ring: ByteRing
    private let loop: AudioLoop
    let kind: StreamKind
    let stats: StreamStats
    /// Set by the player once the output exists; held strongly (the output holds no input).
    var burst: BurstWatcher? = nil
    var prefix: [UInt8]
    var prefixOffset = 0
    var splitter = OggPageSplitter()
    private var page: [UInt8] = []
    private var pageOffset = 0
    private var serial: UInt32? = nil
    private var unwrapper = OggFLACUnwrapper()
    /// The current decoder reached the first page of a new chained logical stream.
    private var chainBoundary = false
    private var pendingPage: (page: OggPage, arrivalMs: Int)? = nil
    var scratch = [UInt8](repeating: 0, count: StreamTuning.oggReadBytes)
    /// When the bytes handed to libFLAC last arrived: for Ogg, when the page being decoded was
    /// complete; for native FLAC, when the last byte read arrived. Never earlier than the
    /// truth, so each frame gives an upper bound on when it could have arrived.
    var arrivalMs: Int
    var readArrivalMs: Int

    // The join (StreamInput+Join.swift): Icecast's connect burst is gathered undecoded until it
    // pauses; only its newest `joinKeepMs` goes to libFLAC.
    let joinKeepMs: Int
    let joinStartedMs: Int
    var gathering: Bool
    var gathered: [(page: OggPage, arrivalMs: Int)] = []
    /// Gathered pages to decode, before anything newer.
    var released: [(page: OggPage, arrivalMs: Int)] = []
    /// The released bytes are all out: tell the output that the burst is over.
    var burstOverToTell = false
    /// Samples the join skipped undecoded, for the output (`takeSkippedSamples`).
    var skippedSamples: Int64 = 0

    /// `joinKeepMs`: 0 decodes the whole burst (the output's join buffer then drops it).
    init(ring: ByteRing, loop: AudioLoop, prefix: [UInt8], kind: StreamKind, stats: StreamStats,
         joinKeepMs: Int, joinStartedMs: Int) {
        self.ring = ring
        self.loop = loop
        self.prefix = prefix
        self.kind = kind
        self.stats = stats
        self.joinKeepMs = joinKeepMs
        self.joinStartedMs = joinStartedMs
        gathering = joinKeepMs > 0 && !prefix.starts(with: Array("fLaC".utf8))
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
            if gathering { gatherNative() }
            if prefixOffset < prefix.count {
                let n = copy(prefix, from: prefixOffset, into: buf)
                prefixOffset += n
                return .bytes(n)
            }
            tellBurstOver()
            while true {
                switch readRing(into: buf) {
                case .bytes(let n):
                    arrivalMs = ring.lastReadArrivalMs
                    return .bytes(n)
                case .ended: return .end
                case .timedOut: burst?.burstPaused()
                }
            }
        }
        while pageOffset >= page.count {
            if chainBoundary { return .end }
            guard let next = pendingPage ?? nextPage() else { return .end }
            pendingPage = nil
            arrivalMs = next.arrivalMs
            if !next.page.checksumValid {
                stats.lostSync()
                continue
            }
            if next.page.beginsStream, let current = serial, current != next.page.serial {
                // Hand this page to the next decoder instance.
                pendingPage = next
                serial = nil
                chainBoundary = true
                return .end
            }
            // A page of another logical stream multiplexed beside this one: not its FLAC.
            if !next.page.beginsStream, let current = serial, current != next.page.serial { continue }
            serial = next.page.serial
            page = unwrapper.flacBody(of: next.page)
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

    /// While joining (gathering the burst, or the output's join buffer filling), waits at most
    /// `burstGapMs`: a pause in the data means Icecast's burst is over; otherwise until the
    /// output's `wakeAtMs`. Waits in the audio loop, so the sound server's messages are handled
    /// meanwhile.
    func readRing(into buf: UnsafeMutableRawBufferPointer) -> ByteRing.ReadResult {
        let deadline = gathering || burst?.joining == true ? monotonicMs() + StreamTuning.burstGapMs : burst?.wakeAtMs
        return ring.read(into: buf, deadlineMs: deadline, oneArrival: true, waitingWith: { [burst, loop] deadline in
            burst?.inputWaits()
            loop.wait(deadlineMs: deadline)
        })
    }
}
