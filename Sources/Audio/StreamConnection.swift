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
    /// no play, pause or stop came after.
    let generation: Int
    // Written by the network thread before the first byte reaches the ring.
    var contentType: String? = nil
    var handedOver = false
    // Written by the decoder thread; read by the network thread when the transfer ends.
    private let lock = Monitor()
    private var _failure: ConnectionFailure? = nil
    private var _playedMs = 0
    private var _decoderDone = false

    init(ring: ByteRing, url: String, generation: Int) {
        self.ring = ring
        self.url = url
        self.generation = generation
    }

    /// Ends this connection. `permanent`: retrying soon will not help (not FLAC); otherwise (the
    /// sound server went away) the usual backoff applies.
    func fail(_ reason: String, permanent: Bool = true) {
        lock.withLock { _failure = ConnectionFailure(reason: reason, permanent: permanent) }
        ring.cancel()
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
