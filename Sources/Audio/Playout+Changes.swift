// The fuzz build (scripts/fuzz playout) compiles this file with Support's into one module.
#if canImport(Support)
import Support
#endif

extension Playout {
    /// The way back towards live at a track change the server announced: the old track's last
    /// frames dropped before it. The change's place is known ahead (Mopidy's event comes a server
    /// delay and the backlog before its audio): its on-time moment X. With a backlog E above the
    /// cushion, more than the margin, the frames within [X − E + P, X + P) are dropped, whole
    /// (one across the start goes when more than half of it lies within), so the new track starts
    /// on time and the listener is E closer to live. X is an estimate (the learned server delay is
    /// off by up to ~150 ms), so the cut reaches P past it (`pastMs`): a cut that ended before the
    /// true boundary would skip within the old track; the new title waits as long (`takeResumed`).
    /// One cut per change, at most the excess and half a frame; a change the decoder passed is
    /// let go. A frame that waited was decoded while the sound server was full: a cut takes only
    /// from the backlog.
    struct Cut {
        /// A backlog above the target by at most this starts no cut (as `Drops`').
        let marginMs: Int
        /// How far past a change's on-time moment the cut reaches (`StreamTuning.cushionCutPastMs`).
        let pastMs: Int
        /// Where the cuts before the changes to come end: their on-time moments plus `pastMs`, in
        /// order, at most `limit`.
        private(set) var changes: [Instant] = []
        /// The cut under way: frames whose audio lies within [from, to) are dropped.
        private(set) var cut: (from: Instant, to: Instant)? = nil
        /// Dropped by the cut under way or the last one, not yet told (`takeDropped`).
        private var droppedUntold = 0
        /// Whether a cut ended since `takeDropped`.
        private(set) var ended = false
        /// The change the last cut ended at, by its on-time moment, and how far past it the first
        /// frame played after the cut begins (its new track is heard that much later): set when a
        /// cut ends, until `takeResumed`.
        private var resumed: (onTime: Instant, laterMs: Int)? = nil
        static let limit = 16

        init(marginMs: Int = StreamTuning.cushionMarginMs, pastMs: Int = StreamTuning.cushionCutPastMs) {
            self.marginMs = max(0, marginMs)
            self.pastMs = max(0, pastMs)
        }

        /// Changes the server announced, at these on-time moments (any order; a repeat is kept once).
        mutating func announced(_ onTimes: [Instant]) {
            guard !onTimes.isEmpty else { return }
            changes = Array(Set(changes + onTimes.map { $0 + pastMs }).sorted().suffix(Self.limit))
        }

        /// A decoded frame of `frameMs` whose audio would have arrived at `onTime` had every page
        /// come on time (nil: not known yet), with the backlog `excessMs` above the target (nil:
        /// not known yet): true when it is dropped instead of played.
        mutating func drop(onTime: Instant?, frameMs: Int, excessMs: Int?) -> Bool {
            guard let start = onTime, frameMs > 0 else { return false }
            let end = start + frameMs
            if let c = cut {
                if end <= c.to {
                    guard start >= c.from else { return false }
                    droppedUntold = droppedUntold.adding(saturating: frameMs)
                    return true
                }
                // The frame that holds the change, and what follows, plays: the new track is
                // heard from this frame's start on.
                cut = nil
                ended = true
                let change = c.to - pastMs
                resumed = (change, max(0, start - change))
                return false
            }
            // Changes the decoder has passed (or is passing) are let go.
            changes.removeAll { $0 <= start }
            guard let x = changes.first, let excess = excessMs, excess > marginMs else { return false }
            // The frame across the cut's start goes with it when more than half of its audio lies
            // within (the cut then comes nearest to the excess, whole frames either way).
            let from = x - excess
            guard end - from > frameMs / 2 else { return false }
            changes.removeFirst()
            cut = (min(start, from), x)
            return drop(onTime: onTime, frameMs: frameMs, excessMs: excessMs)
        }

        /// The change a cut ended at since the last call and how much later than its on-time
        /// moment the new track is heard (nil: no cut ended).
        mutating func takeResumed() -> (onTime: Instant, laterMs: Int)? {
            defer { resumed = nil }
            return resumed
        }

        /// Dropped since the last call, ms, and whether a cut ended meanwhile (a cut is told once
        /// it ended).
        mutating func takeDropped() -> (ms: Int, ended: Bool) {
            guard ended else { return (0, false) }
            defer {
                droppedUntold = 0
                ended = false
            }
            return (droppedUntold, true)
        }
    }

    /// The cushion grown at a track change the server announced, where a stall the link rode out
    /// showed it needs more than is held (`padMs`): silence between the two tracks before the
    /// next stall comes (a stall ridden out leaves no backlog, so the next, a page later, would be
    /// heard). The change's on-time moment X is an estimate, so the audio within X ± `aroundMs`
    /// is played as silence, and the want goes before it: whichever side of X the true boundary
    /// lies, neither track is heard on the far side of the silence. Never within the music, never
    /// by changing speed or pitch; one pad per change, and a change whose window the decoder has
    /// passed is let go (a pad after the boundary was played would be a gap in the new track).
    struct Pad {
        /// How far either side of a change's on-time moment its audio is silenced
        /// (`StreamTuning.cushionCutPastMs`: the same error as the cut's).
        let aroundMs: Int
        /// The on-time moments of the changes to come, in order, at most `limit`.
        private(set) var changes: [Instant] = []
        /// The window being silenced: audio within [from, to).
        private(set) var window: (from: Instant, to: Instant)? = nil
        static let limit = Cut.limit

        init(aroundMs: Int = StreamTuning.cushionCutPastMs) {
            self.aroundMs = max(0, aroundMs)
        }

        /// Changes the server announced, at these on-time moments (any order; a repeat is kept once).
        mutating func announced(_ onTimes: [Instant]) {
            guard !onTimes.isEmpty else { return }
            changes = Array(Set(changes + onTimes).sorted().suffix(Self.limit))
        }

        /// What to do with a frame to be played.
        struct Treatment: Equatable {
            /// Silence written before the frame, ms.
            var silenceMs = 0
            /// The frame's first this many ms are played as silence.
            var mutedMs = 0
            /// The on-time moment of the change the silence is written for (nil: none is): its new
            /// track is heard `aroundMs` after it.
            var paddedChange: Instant? = nil
        }

        /// How much of a frame of `frameMs` from `onTime` lies within the window being silenced,
        /// without moving on (a frame held while paused).
        func mutedMs(onTime: Instant?, frameMs: Int) -> Int {
            guard let w = window, let start = onTime, frameMs > 0 else { return 0 }
            return max(0, min(start + frameMs, w.to) - start)
        }

        /// A decoded frame of `frameMs` whose audio would have arrived at `onTime` had every page
        /// come on time (nil: not known yet), with `wantMs` more cushion wanted than is held (nil:
        /// not known): how it is played. A window begins with the first frame that reaches into it,
        /// and only before the window's start (else the boundary may be heard already); the want
        /// counts only above `leastMs`.
        mutating func treat(onTime: Instant?, frameMs: Int, wantMs: Int?, leastMs: Int) -> Treatment {
            guard let start = onTime, frameMs > 0 else { return Treatment() }
            let end = start + frameMs
            if let w = window {
                defer { if end >= w.to { window = nil } }
                return Treatment(mutedMs: mutedMs(onTime: start, frameMs: frameMs))
            }
            // Changes whose window this frame has reached past are let go.
            while let x = changes.first, start > x - aroundMs { changes.removeFirst() }
            guard let x = changes.first, end > x - aroundMs else { return Treatment() }
            changes.removeFirst()
            guard let want = wantMs, want > max(0, leastMs) else { return Treatment() }
            let to = x + aroundMs
            if end < to { window = (x - aroundMs, to) }
            return Treatment(silenceMs: want, mutedMs: min(end, to) - start, paddedChange: x)
        }
    }
}
