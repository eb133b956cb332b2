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
/// A pause while playing keeps the connection warm (`StreamConnection.keepWarm`): both threads
/// go on, the output holds the newest audio unheard, and a Play in time is heard at once.
public final class StreamPlayer: @unchecked Sendable {
    let monitor = Monitor()
    // Guarded by `monitor`:
    var _config: StreamConfig
    weak var _delegate: StreamPlayerDelegate?
    var wanted = false
    /// Counts play/pause/stop: what a thread started for an older one does not count.
    var generation = 0
    /// The connection being made or played, or kept warm after a pause (cancelled by stop, by a
    /// cold pause, and by a play that cannot resume it).
    var current: StreamConnection? = nil
    /// Connections with data, in order, for the decoder thread.
    var handoff: [StreamConnection] = []
    /// A new connection made while `current` plays, until the decoder takes it over (StreamSwitch).
    var pendingSwitch: SwitchAttempt? = nil
    var status: StreamStatus = .stopped
    private var statusSequence = 0
    private var started = false
    /// No new attempt starts while held (no network); `retryNow` ends a wait and the outage.
    private var held = false
    private var retryRequested = false

    let stats = StreamStats()
    let boundaries = BoundaryRequests()
    let gain = Gain()
    /// The decoder thread's loop; other threads only wake it.
    let loop = AudioLoop()

    public init(config: StreamConfig, delegate: StreamPlayerDelegate?) {
        self._config = config
        self._delegate = delegate
    }

    // MARK: - Control

    /// Connects (or reconnects at the live edge) and plays.
    public func play() { control(wanted: true, status: nil) }

    /// Stops the output at once (what is buffered is dropped). A playing connection is kept
    /// warm for `keepWarmSeconds` (read and decoded, nothing heard; a Play within that time
    /// resumes it at the live edge), else it is closed at once.
    public func pause() { control(wanted: false, status: .paused) }

    /// Stops the output and closes the connection at once, warm or not.
    public func stop() { control(wanted: false, status: .stopped) }

    /// Closes a connection kept warm after a pause, now (the machine goes to sleep: the socket
    /// may not survive it). Nothing else changes.
    public func endWarm() { monitor.withLock { endWarmLocked() } }

    /// Not wanted, `current` is a connection kept after a pause (only a wanted one is made).
    private func endWarmLocked() {
        guard !wanted, let c = current else { return }
        c.ring.cancel()
        current = nil
    }

    /// Until when (monotonic ms) the connection is kept warm after a pause; nil when it is not.
    public var keptWarmUntilMs: Int? { monitor.withLock { wanted ? nil : current?.warmUntilMs } }

    /// Software volume, 0.0–1.0, applied to the samples (for `volume = local`).
    public func setVolume(_ v: Double) { gain.value = v }

    /// Silences the audio decoded from now on, as `s` says (the house paused or stopped).
    public func silence(_ s: HouseSilence) { gain.silence = s }

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

    /// A track change the server announced, at its on-time moment (`BoundaryRequest.onTimeMs`):
    /// the output may cut the end of the track before it to come back towards live (`ChangeCut`)
    /// or grow the cushion at it (`ChangePad`).
    public func changeAnnounced(onTimeMs: Int) { stats.comingChanges.add(onTimeMs) }

    /// Looks for a track change in the audio around when it is expected to be heard; the answer
    /// goes to the delegate (`StreamBoundaryDelegate`) once that audio is decoded.
    public func findBoundary(_ r: BoundaryRequest) { boundaries.add(r) }

    /// Whether the decoder keeps what it needs to find boundaries (a few numbers per 10 ms of
    /// audio): only while the server's delay is learned.
    public func watchBoundaries(_ on: Bool) { boundaries.watching = on }

    /// Replaces the configuration (e.g. a new password after SIGHUP, another route); while
    /// playing, the new connection is made first and taken over at the sample that plays
    /// (`switchOrReconnect`); a connection kept warm is closed. Only a new `keepWarmSeconds` is applied as it is: to the
    /// pause under way, timed from its start.
    public func update(config: StreamConfig) {
        let old = monitor.withLock { () -> StreamConfig? in
            var old = _config
            old.keepWarmSeconds = config.keepWarmSeconds
            _config = config
            if old == config {
                current?.keepWarm(forMs: config.keepWarmSeconds.multiplied(saturating: 1000))
                loop.wake()  // the decoder looks at the new end now
            } else if !wanted {
                endWarmLocked()
            }
            return old == config ? nil : old
        }
        if let old { switchOrReconnect(from: old) }
    }

    public var config: StreamConfig { monitor.withLock { _config } }
    public var currentStatus: StreamStatus { monitor.withLock { status } }
    public var currentFigures: StreamFigures { stats.snapshot }

    /// A new generation: the current connection ends on both threads (the decoder stops writing
    /// within one piece and flushes the sink; libcurl aborts at its next callback), except that a
    /// pause while playing keeps it warm (the decoder silences the sink and holds the newest
    /// audio) and a play resumes a warm one. Pause and stop say so in the same locked step, so
    /// no thread's status can come between.
    private func control(wanted w: Bool, status s: StreamStatus?) {
        monitor.withLock {
            if !started {
                started = true
                startThread(name: "stream-http") { [self] in networkLoop() }
                startThread(name: "decoder") { [self] in decoderLoop() }
            }
            wanted = w
            generation += 1
            dropSwitchLocked()
            let warmMs = _config.keepWarmSeconds.multiplied(saturating: 1000)
            if w, let c = current, c.resumeWarm(generation: generation) {
                // The decoder writes what it holds and says `.playing`.
                publishLocked(.buffering)
                loop.wake()
            } else if s == .paused, warmMs > 0, let c = current, status == .playing || c.warmUntilMs != nil,
                      c.keepWarm(nowMs: monotonicMs(), ms: warmMs) {
                loop.wake()  // the decoder silences the sink now
                if status == .playing { Log.info("stream: paused; connected for \(_config.keepWarmSeconds) s more (keep_warm)") }
            } else {
                current?.ring.cancel()
                current = nil
            }
            if let s { publishLocked(s) }
            monitor.broadcast()
        }
    }

    /// Call with `monitor` held. The delegate hears each change in the order of the lock, with a
    /// strictly increasing sequence (see StreamPlayerDelegate for what it may do meanwhile).
    func publishLocked(_ s: StreamStatus) {
        guard status != s else { return }
        status = s
        statusSequence += 1
        Log.debug("stream: \(s)")
        _delegate?.streamPlayer(statusChanged: s, sequence: statusSequence)
    }

    /// A status from a thread working for `generation`: dropped when a play, pause or stop came
    /// since. `before` runs in the same locked step, only when the status counts.
    @discardableResult
    func publish(_ s: StreamStatus, for generation: Int, before: () -> Void = {}) -> Bool {
        monitor.withLock {
            guard wanted && self.generation == generation else { return false }
            before()
            publishLocked(s)
            return true
        }
    }

    // MARK: - "stream-http"

    /// A failure's reason without the times libcurl puts in it ("Failed to connect … after 3 ms"),
    /// which differ from one attempt to the next on a busy machine: for telling whether the
    /// reason changed.
    static func withoutTimings(_ reason: String) -> String {
        var out = "", rest = Substring(reason)
        while let r = rest.firstRange(ofText: "after ") {
            out += rest[..<r.upperBound]
            rest = rest[r.upperBound...]
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            if !digits.isEmpty && rest.dropFirst(digits.count).hasPrefix(" ms") {
                out += "N"
                rest = rest.dropFirst(digits.count)
            }
        }
        return out + rest
    }

    private func networkLoop() {
        let get = StreamingGet()
        var policy = ReconnectPolicy()
        var lastSaid: (String, Int)? = nil
        while true {
            let (first, asked) = monitor.withLock { () -> (Int, StreamConfig) in
                while !wanted { monitor.wait(deadlineMs: nil) }
                return (generation, _config)
            }
            var config = asked
            var url = redactedURL(config.url)
            var options = StreamingGet.Options(user: config.user, password: config.password)
            options.stallSeconds = config.stallSeconds
            options.connectTimeoutMs = StreamTuning.connectTimeoutMs
            let ring = ByteRing(capacity: config.ringBytes, wake: { [loop] in loop.wake() })
            var c = StreamConnection(ring: ring, url: url, generation: first)
            guard publish(.connecting, for: first, before: { current = c }) else { continue }
            let transfer = StreamTransfer(connection: c, stats: stats) { [self] c in
                monitor.withLock { handoff.append(c) }
                loop.wake()
            }
            var end = get.perform(url: config.url, options: options, delegate: transfer)
            // Kept warm after a pause, it may have been resumed for a later Play.
            var gen = c.endTransfer()
            c.ring.finish()
            // Judge the end only once the decoder has seen every byte: a short reply (an HTML
            // page) is "not FLAC", not "the server ended the stream". Buffered audio plays out.
            if c.handedOver { c.waitForDecoder(deadlineMs: monotonicMs() + StreamTuning.decoderWaitMs) }
            // A switch took over (make before break): its connection is followed from here as
            // this thread's own, through as many switches as come.
            while let next = c.replacement {
                c = next.connection
                (url, config) = (next.connection.url, next.config)
                end = next.waitForEnd()
                gen = c.generation
                if c.handedOver { c.waitForDecoder(deadlineMs: monotonicMs() + StreamTuning.decoderWaitMs) }
            }
            // Ended on its own: a switch still under way is not taken over by anyone.
            monitor.withLock { if current === c { dropSwitchLocked() } }
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
                let said = (Self.withoutTimings(reason), delayMs)
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
}
