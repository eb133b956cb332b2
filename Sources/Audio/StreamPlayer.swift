import Net
import Support
import Synchronization

/// Plays an Icecast FLAC stream: libcurl → byte ring → libFLAC → the playout → PulseAudio.
/// Every method is thread-safe and returns at once. Threads of its own:
/// - "stream-http" connects, reconnects (`ReconnectPolicy`) and fills each connection's ring;
/// - "stream-switch" does the same for a new connection made while the old one plays, until the
///   decoder takes it over (`SwitchAttempt`);
/// - "decoder" plays the connections in order (`Pipeline`), waiting only in its `AudioLoop`,
///   which also runs libpulse: no thread of libpulse's own.
/// Where the connection is in its life is one value (`Life`) under the player's lock; what the
/// player tells goes to its delegate as `StreamEvent`s, one channel.
public final class StreamPlayer: @unchecked Sendable {
    let monitor = Monitor()
    // Guarded by `monitor`:
    var life = Life()
    var _config: StreamConfig
    weak var _delegate: StreamPlayerDelegate?
    /// Connections with data, in order, for the decoder thread.
    var handoff: [StreamConnection] = []
    private var started = false
    /// No new attempt starts while held (no network); `retryNow` ends a wait and the outage.
    private var held = false
    private var retryAsked = false

    /// What the player reports about itself, kept by the part that sees each happen.
    let figures = Mutex(StreamFigures())
    /// Software volume and the house's silence, read by the decoder for every frame.
    let volume = Mutex(1.0)
    let houseSilence = Mutex(HouseSilence.none)
    /// Track changes announced and boundaries to look for, from any thread to the decoder's.
    let announced = Mutex<[Instant]>([])
    let boundaryRequests = Mutex<[BoundaryRequest]>([])
    let watching = Atomic<Bool>(true)
    /// The decoder thread's loop; other threads only wake it.
    let loop = AudioLoop()

    public init(config: StreamConfig, delegate: StreamPlayerDelegate?) {
        self._config = config
        self._delegate = delegate
    }

    // MARK: - Control

    /// Connects (or reconnects at the live edge) and plays.
    public func play() { change(.play) }

    /// Stops the output at once (what is buffered is dropped). A playing connection is kept
    /// warm for `keepWarmSeconds` (read and decoded, nothing heard; a Play within that time
    /// resumes it at the live edge), else it is closed at once.
    public func pause() {
        let ms = config.keepWarmSeconds.multiplied(saturating: 1000)
        change(.pause(keepWarmMs: ms, at: .now))
    }

    /// Stops the output and closes the connection at once, warm or not.
    public func stop() { change(.stop) }

    /// Closes a connection kept warm after a pause, now (the machine goes to sleep: the socket
    /// may not survive it). Nothing else changes.
    public func endWarm() { change(.endWarm) }

    /// Until when (monotonic ms) the connection is kept warm after a pause; nil when it is not.
    public var keptWarmUntilMs: Int? {
        monitor.withLock {
            guard case .warm(let c, _, let until) = life.state, !c.ring.isCancelled else { return nil }
            return until.ms
        }
    }

    /// Software volume, 0.0–1.0, applied to the samples (for `volume = local`).
    public func setVolume(_ v: Double) { volume.withLock { $0 = v.isFinite ? min(1, max(0, v)) : 1 } }

    /// Silences the audio decoded from now on, as `s` says (the house paused or stopped).
    public func silence(_ s: HouseSilence) { houseSilence.withLock { $0 = s } }

    /// Drops the current connection and connects again now (e.g. the password changed).
    public func reconnect() {
        if monitor.withLock({ life.isWanted }) { play() }
    }

    /// Ends a wait between attempts at once and starts the retry schedule afresh: the network
    /// came up, or the server's events socket is back. Nothing happens while connected.
    public func retryNow() {
        monitor.withLock { retryAsked = true }
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
    /// the playout may cut the end of the track before it to come back towards live, or grow the
    /// cushion at it (`Playout`).
    public func changeAnnounced(onTimeMs: Int) {
        announced.withLock {
            if $0.count >= Playout.Cut.limit { $0.removeFirst() }
            $0.append(Instant(ms: onTimeMs))
        }
    }

    /// Looks for a track change in the audio around when it is expected to be heard; the answer
    /// comes as `StreamEvent.boundaryHeard` once that audio is decoded.
    public func findBoundary(_ r: BoundaryRequest) {
        boundaryRequests.withLock {
            if $0.count >= BoundaryDetector.Watch.limit { $0.removeFirst() }
            $0.append(r)
        }
    }

    /// Whether the decoder keeps what it needs to find boundaries (a few numbers per 10 ms of
    /// audio): only while the server's delay is learned.
    public func watchBoundaries(_ on: Bool) { watching.store(on, ordering: .relaxed) }

    /// Replaces the configuration (e.g. a new password after SIGHUP, another route); while
    /// playing, the new connection is made first and taken over at the sample that plays
    /// (`switchOrReconnect`); a connection kept warm is closed. Only a new `keepWarmSeconds` is
    /// applied as it is: to the pause under way, timed from its start.
    public func update(config: StreamConfig) {
        let old = monitor.withLock { () -> StreamConfig? in
            var old = _config
            old.keepWarmSeconds = config.keepWarmSeconds
            _config = config
            if old == config {
                perform(life.apply(.keepWarm(ms: config.keepWarmSeconds.multiplied(saturating: 1000))))
                return nil
            }
            perform(life.apply(.endWarm))
            return old
        }
        if let old { switchOrReconnect(from: old) }
    }

    public var config: StreamConfig { monitor.withLock { _config } }
    public var currentStatus: StreamStatus { monitor.withLock { life.status } }
    public var currentFigures: StreamFigures { figures.withLock { $0 } }

    // MARK: - The life, for the threads

    /// Applies `e` to the life and does what it says; returns the life as it is then.
    @discardableResult
    func change(_ e: Life.Event) -> Life {
        monitor.withLock {
            startThreadsLocked()
            perform(life.apply(e))
            monitor.broadcast()
            return life
        }
    }

    /// Call with `monitor` held.
    func perform(_ actions: [Life.Action]) {
        for a in actions {
            switch a {
            case .cancel(let c): c.ring.cancel()
            case .publish(let s, let sequence):
                Log.debug("stream: \(s)")
                _delegate?.streamPlayer(.status(s, sequence: sequence))
            case .wakeDecoder: loop.wake()
            case .follow(let old, let attempt): old.replacement = attempt
            case .log(let level, let text): Log.write(level, text)
            }
        }
    }

    /// Tells the delegate something other than a status (on the decoder thread).
    func tell(_ e: StreamEvent) { monitor.withLock { _delegate }?.streamPlayer(e) }

    private func startThreadsLocked() {
        guard !started else { return }
        started = true
        startThread(name: "stream-http") { [self] in networkLoop() }
        startThread(name: "decoder") { [self] in Pipeline(player: self).run() }
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
            let (generation, config) = monitor.withLock { () -> (Int, StreamConfig) in
                while true {
                    if case .wanted = life.state { break }
                    monitor.wait(deadlineMs: nil)
                }
                return (life.generation, _config)
            }
            let ring = ByteRing(capacity: config.ringBytes, wake: { [loop] in loop.wake() })
            var c = StreamConnection(ring: ring, url: redactedURL(config.url))
            guard change(.connected(c, generation: generation)).connection === c else { continue }
            var (end, url, user) = (transfer(c, config: config, get: get), c.url, config.user)
            // A switch took over (make before break): its connection is followed from here as
            // this thread's own, through as many switches as come.
            while let next = c.replacement {
                c = next.connection
                (url, user) = (c.url, next.config.user)
                end = next.waitForEnd()
                if c.handedOver { c.waitForDecoder(deadlineMs: monotonicMs() + StreamTuning.decoderWaitMs) }
            }
            if monitor.withLock({ () -> Bool in defer { retryAsked = false }; return retryAsked }) { policy.restartOutage() }
            let next = policy.next(after: c.outcome(end: end), url: url, user: user, slowRetryMs: config.slowRetryMs,
                                   nowMs: monotonicMs())
            guard let (reason, delayMs) = next.retry else { continue }
            let retryAt = Instant.now + delayMs
            guard change(.ended(c, next: next, retryAt: retryAt)).isWaitingToRetry else { continue }
            figures.withLock {
                $0.lastError = Log.scrub(reason)
                $0.reconnects += 1
                $0.delayUnmeasured()
            }
            // Said when an outage starts and when its reason or pace changes: a line for every
            // quick retry would fill the journal.
            let said = (Self.withoutTimings(reason), delayMs)
            var quiet = false
            if case .reconnecting = next { quiet = policy.failuresInOutage > 1 && lastSaid.map { $0 == said } ?? false }
            Log.write(quiet ? .debug : .warning, "stream: \(next)")
            lastSaid = said
            if waitToRetry(until: retryAt) { policy.restartOutage() }
            change(.retry)
        }
    }

    /// One connection's transfer, until it ends and the decoder has seen every byte (a short
    /// reply, an HTML page, is then "not FLAC", not "the server ended the stream").
    private func transfer(_ c: StreamConnection, config: StreamConfig, get: StreamingGet) -> StreamEnd {
        let t = StreamConnection.Transfer(connection: c, received: { [unowned self] n in figures.withLock { $0.bytesReceived += n } },
                               handOver: { [self] c in
            monitor.withLock { handoff.append(c) }
            loop.wake()
        })
        let end = get.perform(url: config.url, options: config.getOptions, delegate: t)
        c.ring.finish()
        if c.handedOver { c.waitForDecoder(deadlineMs: monotonicMs() + StreamTuning.decoderWaitMs) }
        return end
    }

    /// Waits out the time before the next attempt (longer while held); true when `retryNow`
    /// cut it short.
    private func waitToRetry(until: Instant) -> Bool {
        monitor.withLock {
            while !retryAsked && (held || Instant.now < until) {
                switch life.state {
                case .backingOff, .failed: monitor.wait(deadlineMs: held ? nil : until.ms)
                default: return false
                }
            }
            defer { retryAsked = false }
            return retryAsked
        }
    }
}

extension Instant {
    /// Now, on the monotonic clock (read by the threads, never by the playout).
    public static var now: Instant { Instant(ms: monotonicMs()) }
}

extension StreamConfig {
    var getOptions: StreamingGet.Options {
        var o = StreamingGet.Options(user: user, password: password)
        o.stallSeconds = stallSeconds
        o.connectTimeoutMs = StreamTuning.connectTimeoutMs
        return o
    }
}
