import Net
import Support

/// A new connection made while the old one plays (make before break): a changed stream URL,
/// another route, a new password. Its transfer runs on a thread of its own ("stream-switch")
/// while "stream-http" still serves the old one; the decoder lines it up with what plays
/// (`Lineup`) and takes it over at a frame, and from then on "stream-http" follows it as its own.
/// Thread-safe.
final class SwitchAttempt: @unchecked Sendable {
    let connection: StreamConnection
    let config: StreamConfig
    /// When it was asked for: the decoder gives up lining it up `switchWaitMs` later.
    let requested: Instant
    private let lock = Monitor()
    private var _end: StreamEnd? = nil

    init(connection: StreamConnection, config: StreamConfig, requested: Instant) {
        self.connection = connection
        self.config = config
        self.requested = requested
    }

    /// Runs the transfer on "stream-switch" until it ends (the connection cancelled included).
    func start(received: @escaping @Sendable (Int) -> Void, wake: @escaping @Sendable () -> Void) {
        startThread(name: "stream-switch") { [self] in
            let transfer = StreamConnection.Transfer(connection: connection, received: received) { _ in wake() }
            let end = StreamingGet().perform(url: config.url, options: config.getOptions, delegate: transfer)
            connection.ring.finish()
            lock.withLock { _end = end }
            lock.broadcast()
            wake()
        }
    }

    /// Waits for the transfer to end ("stream-http", once this connection is the one playing).
    func waitForEnd() -> StreamEnd {
        lock.withLock {
            while true {
                if let e = _end { return e }
                lock.wait(deadlineMs: nil)
            }
        }
    }

    /// The new connection's units, held until one lines up with what plays: the frame that
    /// begins at the sample the old connection would play next, by the sample numbers in the
    /// frame headers (the same on every connection to the mount, and through a proxy). Bounded;
    /// pure: fed bytes, asked about a position; unit-tested.
    struct Lineup {
        enum Verdict: Equatable {
            /// The position is not in what is held yet (the connection is still coming, or its
            /// oldest audio is still ahead of what plays): ask again at the next frame.
            case wait
            /// Decode the stream's metadata, then the frames from `frames[index]` on.
            case ready(index: Int)
            /// The two cannot be lined up (another stream, a restarted encoder, another rate,
            /// more held than allowed): why, for the log.
            case impossible(String)
        }

        private(set) var reader: FrameReader
        /// Everything fed so far: played as a fresh connection's start if it cannot line up.
        private(set) var bytes: [UInt8] = []
        private(set) var metadata: [FrameReader.Unit] = []
        private(set) var frames: [FrameReader.Unit] = []
        let maxBytes: Int
        /// How far apart (samples) the positions may lie before they are taken for two streams.
        let maxApartSamples: Int64

        init(ogg: Bool, maxBytes: Int, maxApartSamples: Int64) {
            reader = FrameReader(ogg: ogg)
            self.maxBytes = maxBytes
            self.maxApartSamples = maxApartSamples
        }

        mutating func feed<C: Collection>(_ more: C, arrival: Instant) where C.Element == UInt8 {
            bytes.append(contentsOf: more)
            reader.feed(more, arrival: arrival)
            while let u = reader.next() {
                switch u.kind {
                case .frame: frames.append(u)
                case .metadata where frames.isEmpty: metadata.append(u)
                case .metadata, .newStream: break
                }
            }
        }

        /// Where to start so that the first frame decoded begins at `sample`; `sampleRate`: what
        /// plays (another rate is another stream).
        func verdict(at sample: Int64, sampleRate: Int) -> Verdict {
            if bytes.count > maxBytes {
                return .impossible("held \(bytes.count / 1024) KB of the new connection without reaching what plays")
            }
            let headers = frames.compactMap(\.header)
            // Native frames count once a frame that follows them is held: a false sync inside
            // audio has none. Ogg frames are whole packets.
            let counted = reader.ogg ? Array(headers.indices) : headers.indices.filter { i in
                headers[(i + 1)...].prefix(8).contains { $0.firstSample == headers[i].end }
            }
            guard let oldest = counted.first.map({ headers[$0] }), let newest = counted.last.map({ headers[$0] }) else { return .wait }
            if let other = counted.map({ headers[$0] }).first(where: { $0.sampleRate > 0 && $0.sampleRate != sampleRate }) {
                return .impossible("the new connection plays at \(other.sampleRate) Hz, this one at \(sampleRate) Hz")
            }
            if oldest.firstSample.subtractingReportingOverflow(sample).partialValue > maxApartSamples
                || sample.subtractingReportingOverflow(newest.firstSample).partialValue > maxApartSamples {
                return .impossible("the new connection is at sample \(oldest.firstSample)…\(newest.firstSample), what plays at "
                                   + "\(sample): not the same stream (an encoder restarted?)")
            }
            guard let k = counted.last(where: { headers[$0].firstSample <= sample }) else { return .wait }
            let h = headers[k]
            if h.firstSample == sample {
                if reader.ogg && metadata.isEmpty { return .impossible("the new connection sent no stream headers") }
                return .ready(index: k)
            }
            guard sample < h.end else { return .wait }
            return .impossible("the new connection's frames do not begin at sample \(sample) (one begins at \(h.firstSample))")
        }
    }
}

extension StreamPlayer {
    /// A new configuration (`_config`, was `old`) while playing: the new connection is made first
    /// and taken over at the same sample (`SwitchAttempt`); otherwise (nothing heard, or not yet,
    /// or the output itself changes: another sink, sound server or join) the old one is dropped
    /// and the new one made, as for Play. A switch under way is replaced by the newer one.
    func switchOrReconnect(from old: StreamConfig) {
        let made = monitor.withLock { () -> Bool in
            // A new on_output_lost reconnects: the output is opened again where `pause` wants it.
            let sameOutput = old.sink == _config.sink && old.pulseServer == _config.pulseServer
                && old.joinBufferMs == _config.joinBufferMs && old.onOutputLost == _config.onOutputLost
            guard sameOutput, life.status == .playing, let c = life.wanted, !c.ring.isCancelled else { return false }
            let ring = ByteRing(capacity: _config.ringBytes, wake: { [loop] in loop.wake() })
            let next = StreamConnection(ring: ring, url: redactedURL(_config.url))
            let attempt = SwitchAttempt(connection: next, config: _config, requested: .now)
            perform(life.apply(.switchStarted(attempt)))
            guard life.switchUnderWay === attempt else { return false }
            attempt.start(received: { [unowned self] n in figures.withLock { $0.bytesReceived += n } }, wake: { [loop] in loop.wake() })
            Log.info("stream: connecting to \(next.url) while \(c.url) plays (make before break)")
            return true
        }
        if !made { reconnect() }
    }
}
