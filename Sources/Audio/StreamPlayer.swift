import Net
import Support

public enum StreamStatus: Equatable, Sendable, CustomStringConvertible {
    case stopped
    case connecting
    case buffering
    case playing
    case paused
    case reconnecting(inMs: Int, reason: String)
    /// A problem that waiting will not fix by itself (wrong password, not FLAC, no such mount);
    /// retried slowly all the same, in case the server is fixed.
    case failed(reason: String, retryInMs: Int)

    public var description: String {
        switch self {
        case .stopped: return "stopped"
        case .connecting: return "connecting"
        case .buffering: return "buffering"
        case .playing: return "playing"
        case .paused: return "paused"
        case .reconnecting(let ms, let r): return "reconnecting in \(Double(ms) / 1000) s: \(r)"
        case .failed(let r, let ms): return "failed: \(r) (retrying in \(ms / 1000) s)"
        }
    }

    /// Why the connection ended and how long until the next one, for the two waiting statuses.
    var retry: (reason: String, delayMs: Int)? {
        switch self {
        case .reconnecting(let ms, let r): return (r, ms)
        case .failed(let r, let ms): return (r, ms)
        default: return nil
        }
    }
}

/// What the player reports about itself.
public struct StreamFigures: Sendable, Equatable {
    public var format: AudioFormat? = nil
    /// Decoded audio not yet heard: the join buffer plus the sound server's buffer.
    public var bufferedMs = 0
    /// Audio dropped from Icecast's connect burst to play close to live, at the last join.
    public var skippedAtJoinMs = 0
    public var bytesReceived = 0
    public var samplesDecoded = 0
    public var reconnects = 0
    public var lostSync = 0
    public var lastError: String? = nil
    /// How far what is heard lags the stream's live edge as received: the sound server's buffer,
    /// decoded audio not yet written to it, and the received bytes not yet decoded. 0 when not
    /// playing. Updated with every write.
    public var localDelayMs = 0
    public init() {}
}

public protocol StreamPlayerDelegate: AnyObject, Sendable {
    /// Called on one of the player's threads; hand the work on.
    func streamPlayer(statusChanged status: StreamStatus)
}

public struct StreamConfig: Sendable, Equatable {
    public var url: String
    public var user: String?
    public var password: String?
    /// PulseAudio sink name; nil: PULSE_SINK or the server's default.
    public var sink: String?
    /// PulseAudio server; nil: PULSE_SERVER or the session's.
    public var pulseServer: String? = nil
    public var ringBytes = StreamTuning.ringBytes
    /// Newest audio of Icecast's connect burst kept when joining (StreamTuning.joinKeepMs).
    public var joinBufferMs = StreamTuning.joinKeepMs
    public var stallSeconds = StreamTuning.stallSeconds
    /// Wrong password, not FLAC, untrusted certificate: retried this slowly.
    public var slowRetryMs = StreamTuning.slowRetryMs

    public init(url: String, user: String? = nil, password: String? = nil, sink: String? = nil) {
        self.url = url
        self.user = user
        self.password = password
        self.sink = sink
    }
}

/// Plays an Icecast FLAC stream: libcurl → byte ring → libFLAC → PulseAudio. Two threads:
/// "stream-http" connects and reconnects, "decoder" decodes and writes to the sink. Every
/// method is thread-safe and returns at once.
public final class StreamPlayer: @unchecked Sendable {
    private var _config: StreamConfig  // guarded by monitor
    public var config: StreamConfig { monitor.withLock { _config } }
    private weak var _delegate: StreamPlayerDelegate?  // guarded by monitor
    private var delegate: StreamPlayerDelegate? { monitor.withLock { _delegate } }
    private let monitor = Monitor()
    // Guarded by `monitor`:
    private var wanted = false
    private var wantedStatus: StreamStatus = .stopped
    private var generation = 0
    /// The connection being made or played (cancelled by play/pause/stop).
    private var current: Session? = nil
    /// Connections with data, in order, for the decoder thread.
    private var handoff: [Session] = []
    private var status: StreamStatus = .stopped
    private var figures = StreamFigures()
    private var volume = 1.0
    private var started = false

    public init(config: StreamConfig, delegate: StreamPlayerDelegate?) {
        self._config = config
        self._delegate = delegate
    }

    // MARK: - Control

    /// Connects (or reconnects at the live edge) and plays.
    public func play() { control(wanted: true, status: .connecting) }

    /// Stops the output at once (what is buffered is dropped) and disconnects.
    public func pause() { control(wanted: false, status: .paused) }

    public func stop() { control(wanted: false, status: .stopped) }

    /// Software volume, 0.0–1.0, applied to the samples (for `volume = local`).
    public func setVolume(_ v: Double) { monitor.withLock { volume = min(1, max(0, v)) } }

    /// Drops the current connection and connects again now (e.g. the password changed).
    public func reconnect() {
        let playing = monitor.withLock { wanted }
        if playing { control(wanted: true, status: .connecting) }
    }

    public func setDelegate(_ d: StreamPlayerDelegate?) { monitor.withLock { _delegate = d } }

    /// Replaces the configuration (e.g. a new password after SIGHUP); reconnects if playing.
    public func update(config: StreamConfig) {
        monitor.withLock { _config = config }
        reconnect()
    }

    public var currentStatus: StreamStatus { monitor.withLock { status } }
    public var currentFigures: StreamFigures { monitor.withLock { figures } }

    private func control(wanted w: Bool, status s: StreamStatus) {
        let old = monitor.withLock { () -> Session? in
            if !started {
                started = true
                startThread(name: "stream-http") { [self] in networkLoop() }
                startThread(name: "decoder") { [self] in decoderLoop() }
            }
            wanted = w
            wantedStatus = s
            generation += 1
            let old = current
            current = nil
            monitor.broadcast()
            return old
        }
        // Ends the old connection on both threads: the decoder stops writing within one
        // 100 ms piece and flushes the sink; libcurl aborts at its next callback.
        old?.ring.cancel()
        if !w { setStatus(s) }
    }

    private func setStatus(_ s: StreamStatus) {
        let changed = monitor.withLock { () -> Bool in
            guard status != s else { return false }
            status = s
            return true
        }
        if changed {
            Log.debug("stream: \(s)")
            delegate?.streamPlayer(statusChanged: s)
        }
    }

    private func note(error: String) { monitor.withLock { figures.lastError = Log.scrub(error) } }

    // MARK: - Network thread

    /// One connection's hand-off from the network thread to the decoder thread.
    final class Session: @unchecked Sendable {
        let ring: ByteRing
        let url: String
        // Written by the network thread before the first byte reaches the ring.
        var contentType: String? = nil
        var handedOver = false
        // Written by the decoder thread; read by the network thread when the transfer ends.
        private let lock = Monitor()
        private var _failure: ConnectionFailure? = nil
        private var _playedMs = 0
        private var _decoderDone = false
        init(ring: ByteRing, url: String) {
            self.ring = ring
            self.url = url
        }
        /// Ends this connection. `permanent`: retrying soon will not help (not FLAC); otherwise
        /// (the sound server went away) the usual backoff applies.
        func fail(_ reason: String, permanent: Bool = true) {
            lock.withLock { _failure = ConnectionFailure(reason: reason, permanent: permanent) }
            ring.cancel()
        }
        func decoderFinished() { lock.withLock { _decoderDone = true; lock.broadcast() } }
        /// Waits until the decoder has used up this connection's bytes (or `deadlineMs`).
        func waitForDecoder(deadlineMs: Int) {
            lock.withLock { while !_decoderDone { if !lock.wait(deadlineMs: deadlineMs) { return } } }
        }
        func addPlayed(_ ms: Int) { lock.withLock { _playedMs += ms } }
        /// How the connection ended, once the decoder is done with it.
        func outcome(end: StreamEnd) -> ConnectionOutcome {
            lock.withLock { ConnectionOutcome(end: end, failure: _failure, playedMs: _playedMs) }
        }
    }

    private final class Transfer: StreamingGetDelegate {
        let player: StreamPlayer
        let session: Session
        init(player: StreamPlayer, session: Session) {
            self.player = player
            self.session = session
        }
        func streamResponse(status: Int, contentType: String?) -> Bool {
            session.contentType = contentType
            session.handedOver = true
            player.monitor.withLock { player.handoff.append(session); player.monitor.broadcast() }
            return true
        }
        func streamData(_ bytes: UnsafeRawBufferPointer) -> Bool {
            player.monitor.withLock { player.figures.bytesReceived += bytes.count }
            return session.ring.write(bytes)
        }
        func streamShouldAbort() -> Bool { session.ring.isCancelled }
    }

    private func networkLoop() {
        let get = StreamingGet()
        var policy = ReconnectPolicy()
        while true {
            let (gen, config) = monitor.withLock { () -> (Int, StreamConfig) in
                while !wanted { monitor.wait(deadlineMs: nil) }
                return (generation, _config)
            }
            let url = redactedURL(config.url)
            var options = StreamingGet.Options(user: config.user, password: config.password)
            options.stallSeconds = config.stallSeconds
            options.connectTimeoutMs = StreamTuning.connectTimeoutMs
            setStatus(.connecting)
            let s = Session(ring: ByteRing(capacity: config.ringBytes), url: url)
            let superseded = monitor.withLock { () -> Bool in
                guard generation == gen else { return true }
                current = s
                return false
            }
            if superseded { continue }
            let end = get.perform(url: config.url, options: options, delegate: Transfer(player: self, session: s))
            s.ring.finish()
            // Judge the end only once the decoder has seen every byte: a short reply (an HTML
            // page) is "not FLAC", not "the server ended the stream". Buffered audio plays out.
            if s.handedOver { s.waitForDecoder(deadlineMs: monotonicMs() + StreamTuning.decoderWaitMs) }
            let (stillWanted, sameGen) = monitor.withLock { (wanted, generation == gen) }
            guard stillWanted && sameGen else { continue }
            let next = policy.next(after: s.outcome(end: end), url: url, user: config.user, slowRetryMs: config.slowRetryMs)
            let (reason, delay) = next.retry ?? ("", 0)
            note(error: reason)
            monitor.withLock { figures.reconnects += 1 }
            Log.warning("stream: \(next)")
            setStatus(next)
            let deadline = monotonicMs() + delay
            monitor.withLock {
                while wanted && generation == gen && monotonicMs() < deadline { monitor.wait(deadlineMs: deadline) }
            }
        }
    }

    // MARK: - Decoder thread

    private func decoderLoop() {
        var sink: PulseSink? = nil
        while true {
            let s = monitor.withLock { () -> Session in
                while handoff.isEmpty { monitor.wait(deadlineMs: nil) }
                return handoff.removeFirst()
            }
            decode(s, sink: &sink)
            s.decoderFinished()
            // The connection ended. When paused or stopped, silence now and let the sound
            // server go; when reconnecting, what is buffered plays out.
            let keep = monitor.withLock { wanted }
            if !keep {
                sink?.flush()
                sink = nil
                monitor.withLock { figures.bufferedMs = 0; figures.localDelayMs = 0 }
                let st = monitor.withLock { wantedStatus }
                setStatus(st)
            }
        }
    }

    /// Decodes one connection's bytes until they end.
    private func decode(_ s: Session, sink: inout PulseSink?) {
        // Sniff: wait for the first bytes (during silence a native mount can take seconds).
        var head = [UInt8](repeating: 0, count: StreamTuning.sniffBytes)
        var have = 0
        var firstByteMs = 0
        while have < head.count {
            let r = head.withUnsafeMutableBytes { buf in
                // An inconclusive start (a native mount joined mid-stream, quiet audio compresses
                // to little) gets up to `sniffWaitMs` to show its frames.
                s.ring.read(into: UnsafeMutableRawBufferPointer(rebasing: buf[have...]),
                            deadlineMs: have == 0 ? nil : firstByteMs + StreamTuning.sniffWaitMs)
            }
            if case .bytes(let n) = r {
                if have == 0 { firstByteMs = monotonicMs() }
                have += n
                // The magic bytes decide at once; only an inconclusive start waits for more.
                if case .success = StreamSniffer.classify(Array(head[0..<have]), contentType: s.contentType, url: s.url) { break }
            } else { break }
        }
        head.removeLast(head.count - have)
        guard !s.ring.isCancelled, have > 0 else { return }
        setStatus(.buffering)
        let kind: StreamKind
        switch StreamSniffer.classify(head, contentType: s.contentType, url: s.url) {
        case .success(let k): kind = k
        case .failure(let e):
            Log.error("stream: \(e)")
            s.fail(e.description)
            return
        }
        let config = self.config
        let input = Input(ring: s.ring, prefix: head, kind: kind)
        let output = Output(player: self, session: s, input: input, joinBufferMs: config.joinBufferMs, joinStartedMs: firstByteMs,
                            sinkName: config.sink, server: config.pulseServer)
        output.sink = sink
        defer { sink = output.sink }
        while !s.ring.isCancelled {
            guard let decoder = FLACDecoder(container: kind == .oggFLAC ? .ogg : .native,
                                            read: { buf in input.read(into: buf, output: output) },
                                            frame: { f in output.write(f) },
                                            corruption: { [self] in monitor.withLock { figures.lostSync += 1 } }) else {
                s.fail("cannot start the FLAC decoder (out of memory)")
                return
            }
            let outcome = decoder.run()
            if case .failed(let why) = outcome {
                Log.warning("stream: decoder: \(why); restarting it")
            }
            // A new Ogg logical stream (chained Ogg) starts a fresh decoder on the same bytes.
            if input.chainBoundary { input.chainBoundary = false; continue }
            if outcome == .ended || outcome == .stopped { break }
        }
        if output.joining && !s.ring.isCancelled { output.endJoin() }
    }

    /// Bytes from the ring to libFLAC: the sniffed prefix first; Ogg page by page, ending the
    /// decoder at the start of a new chained logical stream.
    private final class Input {
        let ring: ByteRing
        let kind: StreamKind
        var prefix: [UInt8]
        var prefixOffset = 0
        var splitter = OggPageSplitter()
        var page: [UInt8] = []
        var pageOffset = 0
        var serial: UInt32? = nil
        var chainBoundary = false
        var pendingPage: (page: OggPage, arrivalMs: Int)? = nil
        var scratch = [UInt8](repeating: 0, count: StreamTuning.oggReadBytes)
        /// When the bytes handed to libFLAC last arrived: for Ogg, when the page being decoded
        /// was complete; for native FLAC, when the last byte read arrived. Never earlier than
        /// the truth, so each frame gives an upper bound on when it could have arrived.
        var arrivalMs: Int
        private var readArrivalMs: Int

        init(ring: ByteRing, prefix: [UInt8], kind: StreamKind) {
            self.ring = ring
            self.prefix = prefix
            self.kind = kind
            arrivalMs = ring.lastReadArrivalMs
            readArrivalMs = arrivalMs
            if kind == .oggFLAC {
                splitter.feed(prefix)
                self.prefix = []
            }
        }

        func read(into buf: UnsafeMutableRawBufferPointer, output: Output) -> DecoderInput {
            if kind == .nativeFLAC {
                if prefixOffset < prefix.count {
                    let n = min(buf.count, prefix.count - prefixOffset)
                    prefix.withUnsafeBytes { buf.baseAddress!.copyMemory(from: $0.baseAddress! + prefixOffset, byteCount: n) }
                    prefixOffset += n
                    return .bytes(n)
                }
                let r = fromRing(into: buf, output: output)
                if case .bytes = r { arrivalMs = ring.lastReadArrivalMs }
                return r
            }
            while pageOffset >= page.count {
                if chainBoundary { return .end }
                let next: OggPage
                if let p = pendingPage { next = p.page; arrivalMs = p.arrivalMs; pendingPage = nil }
                else if let p = splitter.next() { next = p; arrivalMs = readArrivalMs }
                else {
                    let r = scratch.withUnsafeMutableBytes { fromRing(into: $0, output: output) }
                    guard case .bytes(let n) = r else { return r }
                    readArrivalMs = ring.lastReadArrivalMs
                    splitter.feed(scratch[0..<n])
                    continue
                }
                if !next.checksumValid {
                    output.player.monitor.withLock { output.player.figures.lostSync += 1 }
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
            let n = min(buf.count, page.count - pageOffset)
            page.withUnsafeBytes { buf.baseAddress!.copyMemory(from: $0.baseAddress! + pageOffset, byteCount: n) }
            pageOffset += n
            return .bytes(n)
        }

        /// While joining, waits at most `burstGapMs`: a pause in the data means Icecast's burst is over.
        private func fromRing(into buf: UnsafeMutableRawBufferPointer, output: Output) -> DecoderInput {
            while true {
                let deadline = output.joining ? monotonicMs() + StreamTuning.burstGapMs : nil
                switch ring.read(into: buf, deadlineMs: deadline) {
                case .bytes(let n): return .bytes(n)
                case .ended: return .end
                case .timedOut: output.burstPaused()
                }
            }
        }
    }

    /// Decoded frames to the sink: converts, applies volume, holds the join buffer, reopens the
    /// sink on a format change, stops within one 100 ms piece when the connection is cancelled.
    private final class Output {
        let player: StreamPlayer
        let session: Session
        let input: Input
        let sinkName: String?
        let server: String?
        var sink: PulseSink? = nil
        var joining = true
        var join: JoinBuffer
        var delay = HeardDelayEstimator()
        var pcm: [UInt8] = []
        let converter = PCMConverter()
        var announcedPlaying = false

        init(player: StreamPlayer, session: Session, input: Input, joinBufferMs: Int, joinStartedMs: Int,
             sinkName: String?, server: String?) {
            self.player = player
            self.session = session
            self.input = input
            self.join = JoinBuffer(keepMs: joinBufferMs, startedMs: joinStartedMs)
            self.sinkName = sinkName
            self.server = server
        }

        func write(_ f: DecodedFrame) -> Bool {
            if session.ring.isCancelled { return false }
            let volume = player.monitor.withLock { () -> Double in
                player.figures.samplesDecoded += f.samples
                player.figures.format = f.format
                return player.volume
            }
            converter.convert(f, volume: volume, into: &pcm)
            delay.frameDecoded(samples: f.samples, sampleRate: f.format.sampleRate, arrivalMs: input.arrivalMs)
            if joining {
                join.add(pcm, format: f.format, ms: f.format.milliseconds(frames: f.samples))
                if join.isOverdue(nowMs: monotonicMs()) { endJoin() }
                return !session.ring.isCancelled
            }
            return play(pcm, format: f.format)
        }

        /// The data paused: the burst is over if we hold a join buffer's worth.
        func burstPaused() {
            if joining && join.isFull { endJoin() }
        }

        func endJoin() {
            guard joining else { return }
            joining = false
            player.monitor.withLock { player.figures.skippedAtJoinMs = join.skippedMs }
            if join.skippedMs > 0 { Log.info("stream: joined \(join.skippedMs) ms behind live; skipped that to play near live") }
            guard let format = join.format else { return }
            // What is still held counts in the delay until it is written (see `updateDelay`).
            while let chunk = join.takeFirst() {
                guard play(chunk, format: format) else {
                    join.removeAll()
                    return
                }
            }
        }

        /// pa_simple_get_latency is interpolated by libpulse: no round trip to the sound server.
        func updateDelay(format: AudioFormat, unwrittenMs: Int) {
            guard let sink else { return }
            let paMs = sink.latencyUs() / 1000
            guard let ms = delay.delayMs(nowMs: monotonicMs(), soundServerMs: paMs,
                                         unwrittenMs: unwrittenMs, heldMs: join.heldMs) else { return }
            player.monitor.withLock {
                player.figures.bufferedMs = paMs
                player.figures.localDelayMs = ms
            }
        }

        /// Writes to the sink in pieces of PulseSink's request size (100 ms): a pause is noticed
        /// between two (and the sink is flushed), while neither thread is woken for every few
        /// samples.
        private func play(_ bytes: [UInt8], format: AudioFormat) -> Bool {
            if sink?.format != format {
                sink = nil
                do throws(SinkError) { sink = try PulseSink(format: format, server: server, sink: sinkName) } catch {
                    player.note(error: error.message)
                    Log.error("stream: \(error.message)")
                    session.fail(error.message, permanent: false)
                    return false
                }
                Log.info("stream: playing \(format)")
            }
            if !announcedPlaying {
                // Once per connection: later writes must not hide a "reconnecting" that the
                // network thread reported while buffered audio still plays out.
                announcedPlaying = true
                player.setStatus(.playing)
            }
            let piece = sink!.pieceBytes
            var offset = 0
            while offset < bytes.count {
                if session.ring.isCancelled { return false }
                let n = min(piece, bytes.count - offset)
                let failure: SinkError? = bytes.withUnsafeBytes { raw in
                    do throws(SinkError) {
                        try sink!.write(UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + n)]))
                        return nil
                    } catch { return error }
                }
                if let error = failure {
                    player.note(error: error.message)
                    Log.error("stream: \(error.message)")
                    sink = nil
                    session.fail(error.message, permanent: false)
                    return false
                }
                offset += n
                if offset < bytes.count {
                    updateDelay(format: format, unwrittenMs: format.milliseconds(frames: (bytes.count - offset) / format.sinkBytesPerFrame))
                }
            }
            session.addPlayed(format.milliseconds(frames: bytes.count / format.sinkBytesPerFrame))
            updateDelay(format: format, unwrittenMs: 0)
            return true
        }

    }
}
