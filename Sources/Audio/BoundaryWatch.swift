import Support
import Synchronization

/// A track change the server announced, to be looked for in the audio when it is heard.
public struct BoundaryRequest: Sendable, Equatable {
    /// When the change is expected to leave the speaker here, monotonic ms.
    public var heardAtMs: Int
    /// How far either side of that to look.
    public var windowMs: Int
    /// The server's delay the expectation was made with; handed back with the answer.
    public var serverDelayMs: Int

    public init(heardAtMs: Int, windowMs: Int, serverDelayMs: Int) {
        self.heardAtMs = heardAtMs
        self.windowMs = windowMs
        self.serverDelayMs = serverDelayMs
    }
}

/// The answer to a `BoundaryRequest`.
public struct BoundaryHeard: Sendable, Equatable {
    public var request: BoundaryRequest
    /// Where the clear boundary is heard against the expectation, ms (positive: later); nil when
    /// none was clear (gapless, a crossfade, silence, a pause in the music nearby) or the audio
    /// around it was not all decoded on one connection.
    public var offsetMs: Int?

    public init(request: BoundaryRequest, offsetMs: Int?) {
        self.request = request
        self.offsetMs = offsetMs
    }
}

/// Told what the decoder thread found (`StreamPlayer.findBoundary`). Called on the decoder
/// thread: must not block and must not call back into the player.
public protocol StreamBoundaryDelegate: AnyObject, Sendable {
    func streamPlayer(boundaryHeard: BoundaryHeard)
}

/// Requests from any thread to the decoder thread, which takes them with each frame.
final class BoundaryRequests: Sendable {
    private let pending = Mutex<[BoundaryRequest]>([])
    /// Requests older than this many are dropped (no stream plays them).
    static let limit = 16

    func add(_ r: BoundaryRequest) {
        pending.withLock {
            if $0.count >= Self.limit { $0.removeFirst() }
            $0.append(r)
        }
    }

    func take() -> [BoundaryRequest] {
        pending.withLock { p in
            defer { p.removeAll(keepingCapacity: true) }
            return p
        }
    }
}

/// The decoder thread's side: feeds the detector with each decoded frame and answers each
/// request once the audio around it is decoded, in the connection's own positions. One per
/// connection (positions start again with each).
struct BoundaryWatch {
    private var detector = BoundaryDetector()
    private var waiting: [BoundaryRequest] = []
    /// A request not answered this long after its time is dropped (the stream stopped or lags).
    static let expiryMs = 30_000

    /// `f` was decoded at stream position `atMs`; `originMs` and `delayMs` (HeardDelayEstimator)
    /// place positions in heard time: position p leaves the speaker at origin + p + delay.
    mutating func decoded(_ f: DecodedFrame, atMs: Double, requests: BoundaryRequests, originMs: Double?,
                          delayMs: Int?, nowMs: Int, answer: (BoundaryHeard) -> Void) {
        detector.add(planes: f.planes, channels: f.format.channels, samples: f.samples, bits: f.format.bitsPerSample,
                     sampleRate: f.format.sampleRate, atMs: atMs)
        waiting += requests.take()
        guard !waiting.isEmpty, let originMs, let delayMs else { return }
        waiting.removeAll { r in
            let near = Double(r.heardAtMs) - originMs - Double(delayMs)
            let window = Double(max(0, r.windowMs))
            if detector.isReady(nearMs: near, windowMs: window) {
                let found = detector.find(nearMs: near, windowMs: window)
                let offset = found.map { Int(($0.positionMs - near).rounded()) }
                if let found, let offset {
                    Log.debug("heard-now: a boundary \(offset) ms from where it was expected (score \(found.score), next best \(found.runnerUp))")
                }
                answer(BoundaryHeard(request: r, offsetMs: offset))
                return true
            }
            if !detector.covers(nearMs: near, windowMs: window) || nowMs.subtracting(saturating: r.heardAtMs) > Self.expiryMs {
                answer(BoundaryHeard(request: r, offsetMs: nil))
                return true
            }
            return false
        }
    }
}
