import Support
import Synchronization

/// The way back towards live at a track change the server announced (#24 item 2): which decoded
/// frames to drop just before it. Pure: each frame's on-time moment, the backlog's excess and the
/// changes are inputs; unit-tested. One per connection, on the decoder thread (`OutputCushion`).
///
/// Mopidy's event for a change comes a server delay plus the whole backlog before its audio is
/// decoded here, so the change's place in the stream is known ahead: the audio that would have
/// arrived at X = changedAtMs + serverDelayMs had every page come on time (`BoundaryRequest`,
/// `HeardDelayEstimator.onTimeMs`). With a backlog E above the cushion kept on purpose
/// (`CushionPolicy.excessMs`), more than the margin, the frames whose audio lies within
/// [X − E + P, X + P) are dropped: the old track's last E ms, whole frames only, so that the new
/// track starts on time and the listener is E closer to live (a frame across the cut's start goes
/// with it when more than half of it lies within). X is an estimate (the server's delay, learned
/// from the music, is off by up to ~150 ms), so the cut reaches P past it: the old track is cut to
/// its end and the new one starts up to a fraction of a second into it, where a cut that ended
/// before the true boundary would skip within the old track (`pastMs`); its title waits as long
/// (`takeResumed`). Music is never cut elsewhere, nor sped up. Bounded: at most
/// the excess at the first frame of the cut and half a frame, at most one cut per change, and a
/// change whose X the decoder has passed is let go. A frame that waited was decoded while the
/// sound server's buffer was full, so a cut takes only from the backlog.
struct ChangeCut {
    /// A backlog above the target by at most this starts no cut (as `CushionPolicy`'s).
    let marginMs: Int
    /// How far past a change's on-time moment the cut reaches (`StreamTuning.cushionCutPastMs`).
    let pastMs: Int
    /// Where the cuts before the changes to come end: their on-time moments (monotonic ms) plus
    /// `pastMs`, in order, at most `limit`.
    private(set) var changes: [Int] = []
    /// The cut under way: frames whose audio lies within [fromMs, toMs) are dropped.
    private(set) var cut: (fromMs: Int, toMs: Int)? = nil
    /// Dropped by the cut under way or the last one, not yet told (`takeDropped`).
    private var droppedUntold = 0
    /// Whether a cut ended since `takeDropped` (the excess measured before it is stale).
    private(set) var ended = false
    /// The change the last cut ended at, by its on-time moment, and how far past that moment the
    /// first frame played after the cut begins (its new track is heard that much later): set when
    /// a cut ends, until `takeResumed`.
    private var resumed: (onTimeMs: Int, laterMs: Int)? = nil
    static let limit = 16

    init(marginMs: Int = StreamTuning.cushionMarginMs, pastMs: Int = StreamTuning.cushionCutPastMs) {
        self.marginMs = max(0, marginMs)
        self.pastMs = max(0, pastMs)
    }

    /// Changes the server announced, at `onTimeMs` each (any order; a repeat is kept once): the
    /// end of a cut before each, `pastMs` later.
    mutating func announced(_ onTimeMs: [Int]) {
        guard !onTimeMs.isEmpty else { return }
        changes = Array(Set(changes + onTimeMs.map { $0.adding(saturating: pastMs) }).sorted().suffix(Self.limit))
    }

    /// A decoded frame of `frameMs` whose audio would have arrived at `onTimeMs` had every page
    /// come on time (nil: not known yet), with the backlog `excessMs` above the target (nil: not
    /// known yet): true when it is dropped instead of played.
    mutating func drop(onTimeMs: Int?, frameMs: Int, excessMs: Int?) -> Bool {
        guard let start = onTimeMs, frameMs > 0 else { return false }
        let end = start.adding(saturating: frameMs)
        if let c = cut {
            if end <= c.toMs {
                guard start >= c.fromMs else { return false }
                droppedUntold = droppedUntold.adding(saturating: frameMs)
                return true
            }
            // The frame that holds the change, and what follows, plays: the new track is heard
            // from this frame's start on.
            cut = nil
            ended = true
            let onTime = c.toMs.subtracting(saturating: pastMs)
            resumed = (onTime, max(0, start.subtracting(saturating: onTime)))
            return false
        }
        // Changes the decoder has passed (or is passing) are let go.
        changes.removeAll { $0 <= start }
        guard let x = changes.first, let excess = excessMs, excess > marginMs else { return false }
        // The frame across the cut's start goes with it when more than half of its audio lies
        // within (the cut then comes nearest to the excess, whole frames either way).
        let from = x.subtracting(saturating: excess)
        guard end.subtracting(saturating: from) > frameMs / 2 else { return false }
        changes.removeFirst()
        cut = (min(start, from), x)
        return drop(onTimeMs: onTimeMs, frameMs: frameMs, excessMs: excessMs)
    }

    /// The change a cut ended at since the last call and how much later than its on-time moment
    /// the new track is heard (nil: no cut ended).
    mutating func takeResumed() -> (onTimeMs: Int, laterMs: Int)? {
        defer { resumed = nil }
        return resumed
    }

    /// Dropped since the last call, ms, and whether a cut ended meanwhile (for the log and the
    /// figures: a cut is told once it ended).
    mutating func takeDropped() -> (ms: Int, ended: Bool) {
        guard ended else { return (0, false) }
        defer {
            droppedUntold = 0
            ended = false
        }
        return (droppedUntold, true)
    }
}

/// The on-time moments of the track changes the server announced (`StreamPlayer.changeAnnounced`),
/// from any thread to the decoder thread, which takes them with each frame. Kept apart from
/// `BoundaryRequests` (whose requests `BoundaryWatch` takes), and filled whether or not the
/// decoder watches for boundaries.
final class ComingChanges: Sendable {
    private let pending = Mutex<[Int]>([])

    func add(_ onTimeMs: Int) {
        pending.withLock {
            if $0.count >= ChangeCut.limit { $0.removeFirst() }
            $0.append(onTimeMs)
        }
    }

    func take() -> [Int] {
        pending.withLock { p in
            defer { p.removeAll(keepingCapacity: true) }
            return p
        }
    }
}
