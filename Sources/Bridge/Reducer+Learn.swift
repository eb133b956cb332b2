import Audio
import Support

/// The server's own delay (Mopidy switching → the audio leaving Icecast), learned from where
/// track changes are heard in the music. Pure.
///
/// Each clear boundary gives one sample: the delay the change was expected with plus how far
/// from the expectation the boundary was heard. The estimate moves to the median of the last
/// `keep` samples, by at most `maxStepMs` per change, so one wrong detection among right ones
/// moves nothing and a wrong first one is undone by the next two. Changes without a clear
/// boundary give no sample and move nothing.
public struct ServerDelayLearner: Sendable, Equatable {
    static let keep = 5
    static let maxStepMs = 1000
    /// Samples outside this are faults of the measure, not a server's delay.
    static let plausibleMs = 0...30_000

    /// Where it started: `server_delay_ms`.
    public let startMs: Int
    /// When it started (monotonic ms): an answer to a look made before says nothing of it.
    public let startedAtMs: Int
    public private(set) var estimateMs: Int
    private var recent: [Int] = []
    /// Clear boundaries taken, and track changes looked at.
    public private(set) var boundaries = 0
    public private(set) var lookedAt = 0
    /// When the estimate last changed, monotonic ms.
    public private(set) var changedAtMs: Int? = nil

    public init(startMs: Int, atMs: Int = 0) {
        self.startMs = startMs
        startedAtMs = atMs
        estimateMs = startMs
    }

    /// A track change was looked for; `sampleMs`: the server delay its clear boundary says, nil
    /// when none was clear. Returns how far the estimate moved.
    @discardableResult
    public mutating func heard(sampleMs: Int?, atMs: Int) -> Int {
        lookedAt = lookedAt.adding(saturating: 1)
        guard let sampleMs, Self.plausibleMs.contains(sampleMs) else { return 0 }
        boundaries = boundaries.adding(saturating: 1)
        recent.append(sampleMs)
        if recent.count > Self.keep { recent.removeFirst() }
        let sorted = recent.sorted()
        let n = sorted.count
        let median = n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2
        let step = min(Self.maxStepMs, max(-Self.maxStepMs, median - estimateMs))
        guard step != 0 else { return 0 }
        estimateMs += step
        changedAtMs = atMs
        return step
    }
}

extension BridgeState {
    /// How far either side of the expected moment a boundary is looked for: wider until the
    /// first is found (`server_delay_ms` may be far from this server's), then narrower.
    static let firstBoundaryWindowMs = 2500
    static let boundaryWindowMs = 1500

    /// The server's own delay in use: learned (from `server_delay_ms`; a reload with another
    /// value starts learning again from it), or `server_delay_ms` itself with
    /// `heard_sync_learn = false`.
    var serverDelayMs: Int { config.heardSyncLearn ? learner.estimateMs : config.serverDelayMs }

    /// The server announced a track change now, while this computer plays the stream: the
    /// stream is told where the change is (its cushion may cut before it or grow at it), and,
    /// while the server's delay is learned, asked to look for it in the music. Returns the
    /// change's on-time moment, by which the stream names it later (`heardLater`).
    mutating func announceChange(_ m: Moment, _ fx: inout [Effect]) -> Int? {
        guard local.stream == .playing else { return nil }
        let window = learner.boundaries == 0 ? Self.firstBoundaryWindowMs : Self.boundaryWindowMs
        let request = BoundaryRequest(changedAtMs: m.nowMs, serverDelayMs: serverDelayMs, windowMs: window)
        fx.append(.stream(.changeAnnounced(onTimeMs: request.onTimeMs)))
        if config.heardSyncLearn { fx.append(.stream(.findBoundary(request))) }
        return request.onTimeMs
    }

    /// Where a change looked for was heard: the learned delay follows.
    mutating func learn(_ b: BoundaryHeard, _ m: Moment, _ fx: inout [Effect]) {
        // An answer to a request made before a reload with another start value says nothing of it.
        guard config.heardSyncLearn, b.request.changedAtMs >= learner.startedAtMs else { return }
        let sample = b.offsetMs.map { b.request.serverDelayMs.adding(saturating: $0) }
        let step = learner.heard(sampleMs: sample, atMs: m.nowMs)
        let said = sample.map { "a clear boundary \(b.offsetMs ?? 0) ms from where it was expected: the server's delay \($0) ms" }
            ?? "no clear boundary at the track change"
        fx.append(.log(.debug, "heard-now: \(said)"))
        if abs(step) > 50 {
            fx.append(.log(.info, "heard-now: the server's delay is \(learner.estimateMs) ms (\(step > 0 ? "+" : "")\(step) ms), "
                                  + "learned from \(learner.boundaries) track change(s) heard"))
        }
    }
}
