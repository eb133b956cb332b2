import Net
import Support

/// A new connection made while the old one plays (make before break, #24): a changed stream
/// URL, another route, a new password. Its transfer runs on a thread of its own ("stream-switch")
/// while "stream-http" still serves the old one; the decoder lines it up with what plays
/// (`SwitchFollower`) and takes it over at a frame boundary, and from then on "stream-http" follows
/// it as its own. Thread-safe.
final class SwitchAttempt: @unchecked Sendable {
    let connection: StreamConnection
    let config: StreamConfig
    /// When it was asked for (monotonic ms): the decoder gives up lining it up `switchWaitMs` later.
    let requestedMs: Int
    private let lock = Monitor()
    private var _end: StreamEnd? = nil

    init(connection: StreamConnection, config: StreamConfig, requestedMs: Int) {
        self.connection = connection
        self.config = config
        self.requestedMs = requestedMs
    }

    /// Runs the transfer on "stream-switch" until it ends (the connection cancelled included).
    func start(stats: StreamStats, wake: @escaping @Sendable () -> Void) {
        startThread(name: "stream-switch") { [self] in
            var options = StreamingGet.Options(user: config.user, password: config.password)
            options.stallSeconds = config.stallSeconds
            options.connectTimeoutMs = StreamTuning.connectTimeoutMs
            let transfer = StreamTransfer(connection: connection, stats: stats) { _ in wake() }
            let end = StreamingGet().perform(url: config.url, options: options, delegate: transfer)
            _ = connection.endTransfer()
            connection.ring.finish()
            lock.withLock { _end = end }
            lock.broadcast()
            wake()
        }
    }

    /// How the transfer ended; nil while it goes on.
    var end: StreamEnd? { lock.withLock { _end } }

    /// Waits for the transfer to end ("stream-http", once this connection is the one playing).
    func waitForEnd() -> StreamEnd {
        lock.withLock {
            while _end == nil { lock.wait(deadlineMs: nil) }
            return _end!
        }
    }
}

extension StreamPlayer {
    /// A new configuration (`_config`, was `old`) while playing: the new connection is made first
    /// and taken over at the same sample (`SwitchFollower`); otherwise (nothing heard, or not yet,
    /// or the output itself changes: another sink, sound server or join) the old one is dropped and
    /// the new one made, as for Play. A switch under way is replaced by the newer one.
    func switchOrReconnect(from old: StreamConfig) {
        let made = monitor.withLock { () -> Bool in
            dropSwitchLocked()
            // A new on_output_lost reconnects: the output is opened again where `pause` wants it.
            let sameOutput = old.sink == _config.sink && old.pulseServer == _config.pulseServer
                && old.joinBufferMs == _config.joinBufferMs && old.onOutputLost == _config.onOutputLost
            guard sameOutput, wanted, status == .playing, let c = current, c.warmUntilMs == nil, !c.ring.isCancelled else { return false }
            let ring = ByteRing(capacity: _config.ringBytes, wake: { [loop] in loop.wake() })
            let next = StreamConnection(ring: ring, url: redactedURL(_config.url), generation: generation)
            let attempt = SwitchAttempt(connection: next, config: _config, requestedMs: monotonicMs())
            pendingSwitch = attempt
            attempt.start(stats: stats, wake: { [loop] in loop.wake() })
            Log.info("stream: connecting to \(next.url) while \(c.url) plays (make before break)")
            return true
        }
        if !made { reconnect() }
    }

    /// The decoder takes `attempt` over from `old`: true when it still counts (no play, pause,
    /// stop or newer switch came), and then `old` is ended with "stream-http" told to follow
    /// the new connection (`replacement`).
    func takeOver(_ attempt: SwitchAttempt, from old: StreamConnection) -> Bool {
        monitor.withLock {
            guard pendingSwitch === attempt, wanted, current === old else { return false }
            pendingSwitch = nil
            old.replacement = attempt
            current = attempt.connection
            old.ring.cancel()
            return true
        }
    }

    /// The switch under way, for the decoder (nil when none).
    var switchUnderWay: SwitchAttempt? { monitor.withLock { pendingSwitch } }

    /// Play, pause, stop, or the old connection ended on its own: a switch under way is dropped.
    func dropSwitchLocked() {
        pendingSwitch?.connection.ring.cancel()
        pendingSwitch = nil
    }
}

/// The decoder thread's side of a switch: drains the new connection into a `SwitchAligner` and
/// decides, before each frame of the old connection is written, whether to go on with it, to
/// take the new one over at that frame, or (they cannot be lined up in time) to play the new one
/// as a fresh connection, as a reconnect would. Not thread-safe: the decoder thread owns it.
final class SwitchFollower {
    enum Step {
        /// Decode `prefix`, then the new connection's ring; its first frame to play begins at `from`.
        case aligned(SwitchAttempt, prefix: [UInt8], from: Int64)
        /// Play the new connection from its start (what was held of it first, if anything).
        case fresh(SwitchAttempt, StreamInput.Start?)

        var attempt: SwitchAttempt {
            switch self {
            case .aligned(let a, _, _), .fresh(let a, _): return a
            }
        }
    }

    private let player: StreamPlayer
    private let kind: StreamKind
    private let output: StreamOutput
    private var attempt: SwitchAttempt? = nil
    private var aligner = SwitchAligner(ogg: true, maxBytes: 0, maxApartSamples: 0)
    private var firstByteMs = 0
    private var ended = false
    /// The new connection's start was sniffed as the same kind of stream as the old one's.
    private var sameKind = false
    private var scratch = [UInt8](repeating: 0, count: StreamTuning.oggReadBytes)

    init(player: StreamPlayer, kind: StreamKind, output: StreamOutput) {
        self.player = player
        self.kind = kind
        self.output = output
    }

    /// Before the old connection's frame beginning at `sample` is written: what to do (nil:
    /// write it).
    func look(at sample: Int64, format: AudioFormat) -> Step? {
        guard let a = player.switchUnderWay else {
            if attempt != nil { forget() }
            return nil
        }
        if a !== attempt {
            forget()
            attempt = a
            aligner = SwitchAligner(ogg: kind == .oggFLAC, maxBytes: StreamTuning.switchHoldBytes,
                                    maxApartSamples: Int64(format.sampleRate) * StreamTuning.switchApartSeconds)
            firstByteMs = 0
            ended = false
            sameKind = false
        }
        drain(a.connection)
        let waitedMs = monotonicMs() - a.requestedMs
        let held = aligner.bytes
        if !sameKind && (held.count >= StreamTuning.sniffBytes || (ended && !held.isEmpty)) {
            guard StreamSniffer.classify(Array(held.prefix(StreamTuning.sniffBytes)), contentType: a.connection.contentType,
                                         url: a.connection.url) == .success(kind) else {
                return fresh(a, why: "the new connection is not the same kind of stream")
            }
            sameKind = true
        }
        switch aligner.verdict(at: sample, sampleRate: format.sampleRate) {
        case .ready(let prefix):
            forget()
            Log.info("stream: \(a.connection.url) lined up at sample \(sample), \(waitedMs) ms after asking; switching there")
            return .aligned(a, prefix: prefix, from: sample)
        case .impossible(let why):
            return fresh(a, why: why)
        case .wait:
            if ended { return fresh(a, why: "the new connection ended before it reached what plays") }
            if waitedMs > StreamTuning.switchWaitMs {
                return fresh(a, why: "the new connection did not reach what plays within \(StreamTuning.switchWaitMs) ms")
            }
            return nil
        }
    }

    /// The old connection ended by itself after a frame that ended at `nextSample`: waits (in the
    /// audio loop, bounded by `switchWaitMs` from the request, what was written sent to the sound
    /// server first) for a switch under way to line up.
    func lookAtEnd(nextSample: Int64, format: AudioFormat, loop: AudioLoop) -> Step? {
        while true {
            guard let a = player.switchUnderWay else { return nil }
            if let step = look(at: nextSample, format: format) { return step }
            if a.connection.ring.isCancelled { return nil }
            output.inputWaits()
            loop.wait(deadlineMs: monotonicMs() + 20)
        }
    }

    /// What was held of a switch that is over (taken or dropped) is let go.
    private func forget() {
        attempt = nil
        aligner = SwitchAligner(ogg: true, maxBytes: 0, maxApartSamples: 0)
    }

    private func fresh(_ a: SwitchAttempt, why: String) -> Step {
        Log.warning("stream: cannot line \(a.connection.url) up with what plays: \(why); switching as a reconnect would")
        let bytes = aligner.bytes
        forget()
        guard !bytes.isEmpty else { return .fresh(a, nil) }
        let kind = StreamSniffer.classify(bytes, contentType: a.connection.contentType, url: a.connection.url)
        return .fresh(a, StreamInput.Start(head: bytes, kind: kind, firstByteMs: firstByteMs))
    }

    /// What the new connection has received so far, without waiting, up to the aligner's bound.
    private func drain(_ c: StreamConnection) {
        while !ended && aligner.bytes.count < StreamTuning.switchHoldBytes {
            let room = min(scratch.count, StreamTuning.switchHoldBytes - aligner.bytes.count)
            let r = scratch.withUnsafeMutableBytes { c.ring.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<room]), deadlineMs: 0) }
            switch r {
            case .bytes(let n):
                if firstByteMs == 0 { firstByteMs = monotonicMs() }
                aligner.feed(scratch[0..<n])
            case .timedOut: return
            case .ended: ended = true
            }
        }
    }
}
