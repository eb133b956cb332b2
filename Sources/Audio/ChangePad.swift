import Support

/// The cushion grown at a track change the server announced, where a stall the link rode out
/// showed it needs more than is held (`OutputCushion.padMs`): silence between the two tracks,
/// before the next stall comes. Pure: each frame's on-time moment and the want are inputs;
/// unit-tested. One per connection, on the decoder thread (`OutputCushion`).
///
/// A stall is heard only when it outlasts what is buffered here. The target grows at once with a
/// stall seen in the arrivals (`CushionTarget`), but a stall ridden out leaves no backlog behind:
/// without more audio held, a later stall of the same length, a page later than the last, runs
/// the sound out. So the want is made up where the music allows: the new track starts that much
/// later. The change's on-time moment X is an estimate (off by up to `aroundMs`), so the audio
/// within [X − `aroundMs`, X + `aroundMs`) is played as silence, and the want goes before it:
/// whichever side of X the true boundary lies, no part of either track is heard on the far side
/// of the silence. The old track ends up to `aroundMs` and a frame early, the new one starts up
/// to `aroundMs` into it. Never within the music elsewhere, never by changing speed or pitch.
/// Bounded: one pad per change, at most the want when the window begins, and a change whose
/// window the decoder has passed is let go (a pad after the boundary was played would be a gap
/// in the new track).
struct ChangePad {
    /// How far either side of a change's on-time moment its audio is silenced
    /// (`StreamTuning.cushionCutPastMs`: the same error as the cut's).
    let aroundMs: Int
    /// The on-time moments (monotonic ms) of the changes to come, in order, at most `limit`.
    private(set) var changes: [Int] = []
    /// The window being silenced: audio within [fromMs, toMs).
    private(set) var window: (fromMs: Int, toMs: Int)? = nil
    static let limit = ChangeCut.limit

    init(aroundMs: Int = StreamTuning.cushionCutPastMs) {
        self.aroundMs = max(0, aroundMs)
    }

    /// Changes the server announced, at `onTimeMs` each (any order; a repeat is kept once).
    mutating func announced(_ onTimeMs: [Int]) {
        guard !onTimeMs.isEmpty else { return }
        changes = Array(Set(changes + onTimeMs).sorted().suffix(Self.limit))
    }

    /// What to do with a frame to be played.
    struct Treatment: Equatable {
        /// Silence written before the frame, ms.
        var silenceMs = 0
        /// The frame's first this many ms are played as silence.
        var mutedMs = 0
        /// The on-time moment of the change the silence is written for (nil: none is): its new
        /// track is heard `aroundMs` after it (`StreamStats.changeHeardLater`).
        var paddedChangeMs: Int? = nil
    }

    /// How much of a frame of `frameMs` from `onTimeMs` lies within the window being silenced,
    /// without moving on (a frame held while paused).
    func mutedMs(onTimeMs: Int?, frameMs: Int) -> Int {
        guard let w = window, let start = onTimeMs, frameMs > 0 else { return 0 }
        return max(0, min(start.adding(saturating: frameMs), w.toMs).subtracting(saturating: start))
    }

    /// A decoded frame of `frameMs` whose audio would have arrived at `onTimeMs` had every page
    /// come on time (nil: not known yet), with `wantMs` more cushion wanted than is held (nil:
    /// not known; `OutputCushion.padMs`): how it is played. A window begins with the first frame
    /// that reaches into it, and only before the window's start (else the boundary may be
    /// heard already); the want counts only above `leastMs`.
    mutating func treat(onTimeMs: Int?, frameMs: Int, wantMs: Int?, leastMs: Int) -> Treatment {
        guard let start = onTimeMs, frameMs > 0 else { return Treatment() }
        let end = start.adding(saturating: frameMs)
        if let w = window {
            defer { if end >= w.toMs { window = nil } }
            return Treatment(mutedMs: mutedMs(onTimeMs: start, frameMs: frameMs))
        }
        // Changes whose window this frame has reached past are let go.
        while let x = changes.first, start > x.subtracting(saturating: aroundMs) { changes.removeFirst() }
        guard let x = changes.first, end > x.subtracting(saturating: aroundMs) else { return Treatment() }
        changes.removeFirst()
        guard let want = wantMs, want > max(0, leastMs) else { return Treatment() }
        let to = x.adding(saturating: aroundMs)
        if end < to { window = (x.subtracting(saturating: aroundMs), to) }
        return Treatment(silenceMs: want, mutedMs: min(end, to).subtracting(saturating: start), paddedChangeMs: x)
    }
}
