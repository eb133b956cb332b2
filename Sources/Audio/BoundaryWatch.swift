import Support

/// A track change the server announced, to be looked for in the audio.
///
/// It is expected in the stream where the live edge was `serverDelayMs` after the server
/// switched: at the position that arrived, had every page come on time, at `changedAtMs` +
/// `serverDelayMs`. Stream positions, not moments heard: a stall or an underrun between the
/// change and the look moves what is heard, not where the change is in the stream.
public struct BoundaryRequest: Sendable, Equatable {
    /// When the server switched (its event arrived), monotonic ms.
    public var changedAtMs: Int
    /// The server's delay the expectation is made with; handed back with the answer.
    public var serverDelayMs: Int
    /// How far either side of the expected position to look.
    public var windowMs: Int

    public init(changedAtMs: Int, serverDelayMs: Int, windowMs: Int) {
        self.changedAtMs = changedAtMs
        self.serverDelayMs = serverDelayMs
        self.windowMs = windowMs
    }

    /// The change's on-time moment: when its audio would have arrived had every page come on
    /// time (monotonic ms), by which the stream names the change (`StreamPlayer.changeAnnounced`,
    /// `StreamEvent.changeHeardLater`).
    public var onTimeMs: Int { changedAtMs.adding(saturating: serverDelayMs) }
}

/// The answer to a `BoundaryRequest`.
public struct BoundaryHeard: Sendable, Equatable {
    public var request: BoundaryRequest
    /// Where the clear boundary is against the expectation, ms of stream (positive: later, the
    /// server's delay is that much longer); nil when
    /// none was clear (gapless, a crossfade, silence, a pause in the music nearby) or the audio
    /// around it was not all decoded on one connection.
    public var offsetMs: Int?

    public init(request: BoundaryRequest, offsetMs: Int?) {
        self.request = request
        self.offsetMs = offsetMs
    }
}

/// The decoder thread's side: feeds the detector with each decoded frame and answers each
/// request once the audio around it is decoded, in the connection's own positions. One per
/// connection (positions start again with each).
extension BoundaryDetector {
    struct Watch {
        private var detector = BoundaryDetector()
        private var waiting: [BoundaryRequest] = []
        /// A request not answered this long after its time is dropped (the stream stopped or lags).
        static let expiryMs = 30_000
        /// Requests older than this many are dropped (no stream plays them).
        static let limit = 16

        /// `f` was decoded at stream position `at`, with the requests made since the last frame;
        /// `originMs` (`Playout.Delay`) places positions in time: position p arrives on time at
        /// origin + p.
        mutating func decoded(_ f: DecodedFrame, at position: StreamPosition, requests: [BoundaryRequest], originMs: Double?,
                              now: Instant, answer: (BoundaryHeard) -> Void) {
            let atMs = position.ms
            let nowMs = now.ms
            detector.add(planes: f.planes, channels: f.format.channels, samples: f.samples, bits: f.format.bitsPerSample,
                         sampleRate: f.format.sampleRate, atMs: atMs)
            waiting += requests
            if waiting.count > Self.limit { waiting.removeFirst(waiting.count - Self.limit) }
            guard !waiting.isEmpty, let originMs else { return }
            waiting.removeAll { r in
                let near = Double(r.onTimeMs) - originMs
                let window = Double(max(0, r.windowMs))
                if detector.isReady(nearMs: near, windowMs: window) {
                    let best = detector.best(nearMs: near, windowMs: window)
                    let clear = best.map(detector.isClear) ?? false
                    if let best {
                        Log.debug("heard-now: the best boundary \(Int((best.positionMs - near).rounded())) ms from where it was "
                                  + "expected scores \(best.score), the next \(best.runnerUp): \(clear ? "clear" : "not clear")")
                    }
                    answer(BoundaryHeard(request: r, offsetMs: clear ? best.map { Int(($0.positionMs - near).rounded()) } : nil))
                    return true
                }
                if !detector.covers(nearMs: near, windowMs: window) || nowMs.subtracting(saturating: r.onTimeMs) > Self.expiryMs {
                    Log.debug("heard-now: the audio around the change was not all decoded on this connection")
                    answer(BoundaryHeard(request: r, offsetMs: nil))
                    return true
                }
                return false
            }
        }
    }
}
