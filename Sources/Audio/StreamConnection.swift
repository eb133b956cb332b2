import Net
import Support

/// One connection's hand-off from the network thread to the decoder thread: its bytes (the
/// ring), and what the decoder found out that decides the next connection. Thread-safe in the
/// parts marked so.
final class StreamConnection: @unchecked Sendable {
    let ring: ByteRing
    /// The stream's address without credentials, for messages.
    let url: String
    /// The player's generation this connection belongs to: a status from it counts only while
    /// no play, pause or stop came after. A Play that resumes it warm moves it to its own.
    var generation: Int { lock.withLock { _generation } }
    // Written by the network thread before the first byte reaches the ring.
    var contentType: String? = nil
    var handedOver = false
    // Written by the decoder thread; read by the network thread when the transfer ends.
    private let lock = Monitor()
    private var _failure: ConnectionFailure? = nil
    private var _playedMs = 0
    private var _decoderDone = false
    private var _generation: Int
    // Kept warm (keep_warm): after a pause the transfer and the decoder go on, nothing is heard.
    private var warm: (sinceMs: Int, untilMs: Int)? = nil
    private var pauses = 0
    private var transferEnded = false
    private var _replacement: SwitchAttempt? = nil

    init(ring: ByteRing, url: String, generation: Int) {
        self.ring = ring
        self.url = url
        _generation = generation
    }

    /// Paused here with this connection kept for `ms` from `nowMs`, or from when it was already
    /// kept (a second Pause does not extend it). False when it cannot be (ended or cancelled).
    func keepWarm(nowMs: Int, ms: Int) -> Bool {
        lock.withLock {
            guard !transferEnded, !ring.isCancelled else { return false }
            if warm == nil {
                warm = (nowMs, nowMs.adding(saturating: ms))
                pauses += 1
            }
            return true
        }
    }

    /// A Play while kept warm: heard again, for `generation`. False when not warm any more.
    func resumeWarm(generation: Int) -> Bool {
        lock.withLock {
            guard warm != nil, !transferEnded, !ring.isCancelled else { return false }
            warm = nil
            _generation = generation
            return true
        }
    }

    /// `keep_warm` changed (a reload): timed from the pause.
    func keepWarm(forMs ms: Int) {
        lock.withLock { if let w = warm { warm = (w.sinceMs, w.sinceMs.adding(saturating: ms)) } }
    }

    /// How many pauses kept this connection, and until when the current one does (nil: heard).
    var warmth: (pauses: Int, untilMs: Int?) { lock.withLock { (pauses, warm?.untilMs) } }

    /// Until when the connection is kept warm, while it is.
    var warmUntilMs: Int? { lock.withLock { ring.isCancelled || transferEnded ? nil : warm?.untilMs } }

    /// Ends the connection once its warm time is over (not when a Play came first): true if it did.
    func expireWarm(nowMs: Int) -> Bool {
        lock.withLock {
            guard let w = warm, nowMs >= w.untilMs else { return false }
            warm = nil
            ring.cancel()
            return true
        }
    }

    /// The network thread: the transfer is over, no Play resumes it from here on. Returns the
    /// generation it serves now.
    func endTransfer() -> Int {
        lock.withLock {
            transferEnded = true
            return _generation
        }
    }

    /// Ends this connection. `permanent`: retrying soon will not help (not FLAC); otherwise (the
    /// sound server went away) the usual backoff applies.
    func fail(_ reason: String, permanent: Bool = true) {
        lock.withLock { _failure = ConnectionFailure(reason: reason, permanent: permanent) }
        ring.cancel()
    }

    /// The connection a switch took over from this one with (`StreamPlayer.takeOver`): set
    /// before this one is cancelled, so "stream-http" follows it when this transfer ends.
    var replacement: SwitchAttempt? {
        get { lock.withLock { _replacement } }
        set { lock.withLock { _replacement = newValue } }
    }

    func addPlayed(_ ms: Int) { lock.withLock { _playedMs += ms } }

    func decoderFinished() {
        lock.withLock { _decoderDone = true }
        lock.broadcast()
    }

    /// Waits until the decoder has used up this connection's bytes (or `deadlineMs`).
    func waitForDecoder(deadlineMs: Int) {
        lock.withLock { while !_decoderDone { if !lock.wait(deadlineMs: deadlineMs) { return } } }
    }

    /// How the connection ended, once the decoder is done with it.
    func outcome(end: StreamEnd) -> ConnectionOutcome {
        lock.withLock { ConnectionOutcome(end: end, failure: _failure, playedMs: _playedMs) }
    }
}

/// libcurl's side of one connection, on "stream-http": the response hands the connection to the
/// decoder thread (through `handOver`), the body goes into the ring.
final class StreamTransfer: StreamingGetDelegate {
    private let connection: StreamConnection
    private let stats: StreamStats
    private let handOver: (StreamConnection) -> Void

    init(connection: StreamConnection, stats: StreamStats, handOver: @escaping (StreamConnection) -> Void) {
        self.connection = connection
        self.stats = stats
        self.handOver = handOver
    }

    func streamResponse(status: Int, contentType: String?) -> Bool {
        connection.contentType = contentType
        connection.handedOver = true
        handOver(connection)
        return true
    }

    func streamData(_ bytes: UnsafeRawBufferPointer) -> Bool {
        stats.received(bytes: bytes.count)
        return connection.ring.write(bytes)
    }

    func streamShouldAbort() -> Bool { connection.ring.isCancelled }
}
