import Net
import Support

/// The source: one connection to the stream, handed from the network thread to the decoder
/// thread — its bytes with when each arrived (the ring), and what the decoder found out that
/// decides the next connection. Where it is in its life is the player's (`StreamPlayer.Life`).
/// Thread-safe in the parts marked so.
final class StreamConnection: @unchecked Sendable {
    let ring: ByteRing
    /// The stream's address without credentials, for messages.
    let url: String
    // Written by the network thread before the decoder thread is handed the connection.
    var contentType: String? = nil
    var handedOver = false
    // Written by the decoder thread; read by the network thread when the transfer ends.
    private let lock = Monitor()
    private var failure: ReconnectPolicy.Failure? = nil
    private var playedMs = 0
    private var decoderDone = false
    private var _replacement: SwitchAttempt? = nil

    init(ring: ByteRing, url: String) {
        self.ring = ring
        self.url = url
    }

    /// Ends this connection. `permanent`: retrying soon will not help (not FLAC); otherwise (the
    /// sound server went away) the usual backoff applies.
    func fail(_ reason: String, permanent: Bool = true) {
        lock.withLock { failure = ReconnectPolicy.Failure(reason: reason, permanent: permanent) }
        ring.cancel()
    }

    /// The connection a switch took over from this one with (`StreamPlayer.takeOver`): set
    /// before this one is cancelled, so "stream-http" follows it when this transfer ends.
    var replacement: SwitchAttempt? {
        get { lock.withLock { _replacement } }
        set { lock.withLock { _replacement = newValue } }
    }

    func addPlayed(_ ms: Int) { lock.withLock { playedMs = playedMs.adding(saturating: ms) } }

    func decoderFinished() {
        lock.withLock { decoderDone = true }
        lock.broadcast()
    }

    /// Waits until the decoder has used up this connection's bytes (or `deadlineMs`).
    func waitForDecoder(deadlineMs: Int) {
        lock.withLock { while !decoderDone { if !lock.wait(deadlineMs: deadlineMs) { return } } }
    }

    /// How the connection ended, once the decoder is done with it.
    func outcome(end: StreamEnd) -> ReconnectPolicy.Outcome {
        lock.withLock { ReconnectPolicy.Outcome(end: end, failure: failure, playedMs: playedMs) }
    }
}

extension StreamConnection {
    /// libcurl's side of one connection, on "stream-http" (or a switch's "stream-switch"): the
    /// response hands the connection to the decoder thread (`handOver`), the body goes into the ring.
    final class Transfer: StreamingGetDelegate {
        private let connection: StreamConnection
        private let received: (Int) -> Void
        private let handOver: (StreamConnection) -> Void

        init(connection: StreamConnection, received: @escaping (Int) -> Void, handOver: @escaping (StreamConnection) -> Void) {
            self.connection = connection
            self.received = received
            self.handOver = handOver
        }

        func streamResponse(status: Int, contentType: String?) -> Bool {
            connection.contentType = contentType
            connection.handedOver = true
            handOver(connection)
            return true
        }

        func streamData(_ bytes: UnsafeRawBufferPointer) -> Bool {
            received(bytes.count)
            return connection.ring.write(bytes)
        }

        func streamShouldAbort() -> Bool { connection.ring.isCancelled }
    }
}
