import Net
import Support

/// Plays an Icecast FLAC stream: libcurl → byte ring → libFLAC → PulseAudio. Every method is
/// thread-safe and returns at once. Two threads of its own:
/// - "stream-http" connects, reconnects (`ReconnectPolicy`) and fills each connection's ring
///   (`StreamTransfer`);
/// - "decoder" takes the connections in order, sniffs and feeds libFLAC (`StreamInput`) and
///   writes to the sound server (`StreamOutput`), keeping the sink from one connection to the
///   next. It waits only in its `AudioLoop`, which also runs libpulse: no thread of libpulse's.
/// The parts keep their figures in `StreamStats`; the player's lock guards only what is below.
public final class StreamPlayer: @unchecked Sendable {
    private let monitor = Monitor()
    // Guarded by `monitor`:
    private var _config: StreamConfig
    private weak var _delegate: StreamPlayerDelegate?
    private var wanted = false
    /// Counts play/pause/stop: what a thread started for an older one does not count.
    private var generation = 0
    /// The connection being made or played (cancelled by play/pause/stop).
    private var current: StreamConnection? = nil
    /// Connections with data, in order, for the decoder thread.
    private var handoff: [StreamConnection] = []
    private var status: StreamStatus = .stopped
    private var statusSequence = 0
    private var started = false
    /// No new attempt starts while held (no network); `retryNow` ends a wait and the outage.
    private var held = false
    private var retryRequested = false

    private let stats = StreamStats()
    private let boundaries = BoundaryRequests()
    private let gain = Gain()
    /// The decoder thread's loop; other threads only wake it.
    private let loop = AudioLoop()

    public init(config: StreamConfig, delegate: StreamPlayerDelegate?) {
        self._config = config
        self._delegate = delegate
    }

    // MARK: - Control

    /// Connects (or reconnects at the live edge) and plays.
    public func play() { control(wanted: true, status: nil) }

    /// Stops the output at once (what is buffered is dropped) and disconnects.
    public func pause() { control(wanted: false, status: .paused) }

    public func stop() { control(wanted: false, status: .stopped) }

    /// Software volume, 0.0–1.0, applied to the samples (for `volume = local`).
    public func setVolume(_ v: Double) { gain.value = v }

    /// Drops the current connection and connects again now (e.g. the password changed).
    public func reconnect() {
        let playing = monitor.withLock { wanted }
        if playing { play() }
    }

    /// Ends a wait between attempts at once and starts the retry schedule afresh: the network
    /// came up, or the server's events socket is back. Nothing happens while connected.
    public func retryNow() {
        monitor.withLock { retryRequested = true }
        monitor.broadcast()
    }

    /// While held (no network), a failed connection is not attempted again until released; a
    /// connection that works goes on.
    public func hold(_ on: Bool) {
        monitor.withLock { held = on }
        monitor.broadcast()
    }

    public func setDelegate(_ d: StreamPlayerDelegate?) { monitor.withLock { _delegate = d } }

    /// Looks for a track change in the audio around when it is expected to be heard; the answer
    /// goes to the delegate (`StreamBoundaryDelegate`) once that audio is decoded.
    public func findBoundary(_ r: BoundaryRequest) { boundaries.add(r) }

    /// Whether the decoder keeps what it needs to find boundaries (a few numbers per 10 ms of
    /// audio): only while the server's delay is learned.
    public func watchBoundaries(_ on: Bool) { boundaries.watching = on }

    /// Replaces the configuration (e.g. a new password after SIGHUP); reconnects if playing.
    public func update(config: StreamConfig) {
        monitor.withLock { _config = config }
        reconnect()
    }

    public var config: StreamConfig { monitor.withLock { _config } }
    public var currentStatus: StreamStatus { monitor.withLock { status } }
    public var currentFigures: StreamFigures { stats.snapshot }

    /// A new generation: the current connection ends on both threads (the decoder stops writing
    /// within one piece and flushes the sink; libcurl aborts at its next callback). Pause and
    /// stop say so in the same locked step, so no thread's status can come between.
    private func control(wanted w: Bool, status s: StreamStatus?) {
        monitor.withLock {
            if !started {
                started = true
                startThread(name: "stream-http") { [self] in networkLoop() }
                startThread(name: "decoder") { [self] in decoderLoop() }
            }
            wanted = w
            generation += 1
            current?.ring.cancel()
            current = nil
            if let s { publishLocked(s) }
            monitor.broadcast()
        }
    }

    /// Call with `monitor` held. The delegate hears each change in the order of the lock, with a
    /// strictly increasing sequence (see StreamPlayerDelegate for what it may do meanwhile).
    private func publishLocked(_ s: StreamStatus) {
        guard status != s else { return }
        status = s
        statusSequence += 1
        Log.debug("stream: \(s)")
        _delegate?.streamPlayer(statusChanged: s, sequence: statusSequence)
    }

    /// A status from a thread working for `generation`: dropped when a play, pause or stop came
    /// since. `before` runs in the same locked step, only when the status counts.
    @discardableResult
    private func publish(_ s: StreamStatus, for generation: Int, before: () -> Void = {}) -> Bool {
        monitor.withLock {
            guard wanted && self.generation == generation else { return false }
            before()
            publishLocked(s)
            return true
        }
    }

    // MARK: - "stream-http"

    private func networkLoop() {
        let get = StreamingGet()
        var policy = ReconnectPolicy()
        var lastSaid: (String, Int)? = nil
        while true {
            let (gen, config) = monitor.withLock { () -> (Int, StreamConfig) in
                while !wanted { monitor.wait(deadlineMs: nil) }
                return (generation, _config)
            }
            let url = redactedURL(config.url)
            var options = StreamingGet.Options(user: config.user, password: config.password)
            options.stallSeconds = config.stallSeconds
            options.connectTimeoutMs = StreamTuning.connectTimeoutMs
            let ring = ByteRing(capacity: config.ringBytes, wake: { [loop] in loop.wake() })
            let c = StreamConnection(ring: ring, url: url, generation: gen)
            guard publish(.connecting, for: gen, before: { current = c }) else { continue }
            let transfer = StreamTransfer(connection: c, stats: stats) { [self] c in
                monitor.withLock { handoff.append(c) }
                loop.wake()
            }
            let end = get.perform(url: config.url, options: options, delegate: transfer)
            c.ring.finish()
            // Judge the end only once the decoder has seen every byte: a short reply (an HTML
            // page) is "not FLAC", not "the server ended the stream". Buffered audio plays out.
            if c.handedOver { c.waitForDecoder(deadlineMs: monotonicMs() + StreamTuning.decoderWaitMs) }
            guard monitor.withLock({ wanted && generation == gen }) else { continue }
            if monitor.withLock({ () -> Bool in defer { retryRequested = false }; return retryRequested }) {
                policy.restartOutage()
            }
            let next = policy.next(after: c.outcome(end: end), url: url, user: config.user, slowRetryMs: config.slowRetryMs,
                                   nowMs: monotonicMs())
            guard let (reason, delayMs) = next.retry, publish(next, for: gen, before: {
                stats.connectionEnded(reason: reason)
                // Said when an outage starts and when its reason or pace changes: a line for every
                // quick retry would fill the journal.
                let said = (reason, delayMs)
                var quiet = false
                if case .reconnecting = next { quiet = policy.failuresInOutage > 1 && lastSaid.map { $0 == said } ?? false }
                Log.write(quiet ? .debug : .warning, "stream: \(next)")
                lastSaid = said
            }) else { continue }
            let deadline = monotonicMs().adding(saturating: delayMs)
            let retried = monitor.withLock { () -> Bool in
                while wanted && generation == gen && !retryRequested && (held || monotonicMs() < deadline) {
                    monitor.wait(deadlineMs: held ? nil : deadline)
                }
                defer { retryRequested = false }
                return retryRequested
            }
            if retried { policy.restartOutage() }
        }
    }

    // MARK: - "decoder"

    private func decoderLoop() {
        var sink: PulseSink? = nil
        while true {
            // Idle, the loop sleeps in poll(2) with no timeout; the sound server's messages for a
            // corked stream (moved, killed, gone) are handled meanwhile.
            guard let c = monitor.withLock({ handoff.isEmpty ? nil : handoff.removeFirst() }) else {
                loop.wait(deadlineMs: nil)
                continue
            }
            sink = decode(c, sink: sink)
            c.decoderFinished()
            // The connection ended. When paused or stopped, silence now (cork + flush; the
            // stream stays for the next Play); when reconnecting, what is buffered plays out.
            if !monitor.withLock({ wanted }) {
                sink?.pause()
                sink?.onOutputLost = nil
                stats.outputStopped()
            }
            // A stream PulseAudio moved elsewhere is not reused: Play opens the configured output
            // (or the default) again.
            if sink?.lost != nil || sink?.failure != nil { sink = nil }
        }
    }

    /// The sound output went away while playing (`on_output_lost = pause`): this computer stops
    /// listening as if paused, with the reason, in one locked step.
    private func outputLost(_ reason: String, generation g: Int) {
        monitor.withLock {
            guard wanted && generation == g else { return }
            Log.warning("stream: \(reason); paused (on_output_lost = pause)")
            stats.note(error: reason)
            wanted = false
            generation += 1
            current?.ring.cancel()
            current = nil
            publishLocked(.outputLost(reason: reason))
            monitor.broadcast()
        }
    }

    /// Decodes one connection's bytes until they end; returns the sink for the next one.
    private func decode(_ c: StreamConnection, sink: PulseSink?) -> PulseSink? {
        guard let start = StreamInput.sniff(c) else { return sink }
        publish(.buffering, for: c.generation)
        let kind: StreamKind
        switch start.kind {
        case .success(let k): kind = k
        case .failure(let e):
            Log.error("stream: \(e)")
            c.fail(e.description)
            return sink
        }
        let config = self.config
        let input = StreamInput(ring: c.ring, loop: loop, prefix: start.head, kind: kind, stats: stats,
                                joinKeepMs: config.joinBufferMs, joinStartedMs: start.firstByteMs)
        var settings = StreamOutput.Settings(joinKeepMs: config.joinBufferMs, sinkName: config.sink,
                                             server: config.pulseServer,
                                             lostAction: { [weak self] in self?.config.onOutputLost ?? .pause })
        settings.boundaries = boundaries
        settings.onBoundary = { [self] heard in
            (monitor.withLock { _delegate } as? StreamBoundaryDelegate)?.streamPlayer(boundaryHeard: heard)
        }
        let output = StreamOutput(
            connection: c, settings: settings, sink: sink, loop: loop, joinStartedMs: start.firstByteMs, stats: stats,
            gain: gain, onPlaying: { [self] in publish(.playing, for: c.generation) },
            onOutputLost: { [self] reason in outputLost(reason, generation: c.generation) })
        input.burst = output
        while !c.ring.isCancelled {
            guard let decoder = FLACDecoder(container: kind == .oggFLAC ? .ogg : .native,
                                            read: { buf in input.read(into: buf) },
                                            frame: { f in output.write(f, arrivalMs: input.arrivalMs, skippedSamples: input.takeSkippedSamples()) },
                                            corruption: { [stats] in stats.lostSync() }) else {
                c.fail("cannot start the FLAC decoder (out of memory)")
                return output.sink
            }
            let outcome = decoder.run()
            if case .failed(let why) = outcome {
                Log.warning("stream: decoder: \(why); restarting it")
            }
            // A new Ogg logical stream (chained Ogg) starts a fresh decoder on the same bytes.
            if input.startNextChain() { continue }
            if outcome == .ended || outcome == .stopped { break }
        }
        output.finish()
        return output.sink
    }
}
