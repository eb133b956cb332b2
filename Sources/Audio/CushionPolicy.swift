import Support

/// The way back towards live after the link held the stream (a stall, then a burst): which decoded
/// frames to drop. Pure: the clock, how long each frame's bytes waited and what it holds are
/// inputs; unit-tested. One per connection, on the decoder thread (`StreamOutput`).
///
/// Playback resumes where a stall stopped it, so each stall that underran leaves the listener
/// behind by what it lost, for good: the audio that came in the burst waits in the input, and so
/// does every byte after it. How long the bytes of each decoded frame waited is that excess, as
/// it is (on a clean link a frame waits at most about a write piece: the decoder keeps up, the sound
/// server's buffer is full). When even the least wait of the last `windowMs` is more than `marginMs`
/// above `extraMs` (a cushion kept on purpose), frames are dropped, but only where nothing is cut
/// out of the music: whole frames of digital silence (a pause between tracks, the silent start of
/// one), until a frame waited no more than half the margin above it. Never by changing speed or
/// pitch. A frame that waited was decoded while the sound server's buffer was full, so a drop
/// takes only from the backlog: it cannot cause an underrun.
struct CushionPolicy {
    /// A wait above the target by at most this starts no drop: jitter and a busy CPU drop nothing
    /// vs. how close to live the way back ends (it ends at half the margin).
    let marginMs: Int
    /// Wait kept on purpose (a cushion against the next stall).
    var extraMs: Int
    /// The least wait must hold for this long before a drop starts.
    let windowMs: Int
    /// (when, how long it waited) of each frame within the last `windowMs`.
    private var recent: [(atMs: Int, waitedMs: Int)] = []
    /// A run of drops is under way (until a frame waited little enough).
    private(set) var dropping = false
    /// Dropped on this connection, ms.
    private(set) var droppedMs = 0
    /// Dropped since `takeDropped`.
    private var droppedUntold = 0

    init(marginMs: Int = StreamTuning.cushionMarginMs, extraMs: Int = 0, windowMs: Int = StreamTuning.cushionWindowMs) {
        self.marginMs = max(0, marginMs)
        self.extraMs = max(0, extraMs)
        self.windowMs = max(0, windowMs)
    }

    /// How long the newest frame's bytes waited before it was decoded (nil before the first).
    var lastWaitMs: Int? { recent.last?.waitedMs }

    /// The least wait of the frames within the last `windowMs`, above `extraMs`; nil when the
    /// frames seen so far span less than the window.
    func excessMs(nowMs: Int) -> Int? {
        guard let first = recent.first, nowMs.subtracting(saturating: first.atMs) >= windowMs,
              let least = recent.lazy.map(\.waitedMs).min() else { return nil }
        return least.subtracting(saturating: extraMs)
    }

    /// A decoded frame of `frameMs`, whose bytes arrived `waitedMs` before `nowMs`: true when it
    /// is dropped instead of played.
    mutating func drop(frameMs: Int, waitedMs: Int, silent: Bool, nowMs: Int) -> Bool {
        let waited = max(0, waitedMs)
        recent.append((nowMs, waited))
        // Keep the newest frame older than the window: the span it covers is then known.
        while recent.count > 1, nowMs.subtracting(saturating: recent[1].atMs) >= windowMs { recent.removeFirst() }
        let over = waited.subtracting(saturating: extraMs)
        if over <= marginMs / 2 { dropping = false }
        if !dropping, let excess = excessMs(nowMs: nowMs), excess > marginMs { dropping = true }
        guard dropping, silent, frameMs > 0, over.subtracting(saturating: frameMs) >= marginMs / 2 else { return false }
        droppedMs = droppedMs.adding(saturating: frameMs)
        droppedUntold = droppedUntold.adding(saturating: frameMs)
        return true
    }

    /// The waits seen so far no longer say what waits (a cut took from the backlog): the excess
    /// is unknown until the frames span the window again.
    mutating func restartWindow() {
        recent.removeAll(keepingCapacity: true)
        dropping = false
    }

    /// What was dropped since the last call, ms (for the log and the figures).
    mutating func takeDropped() -> Int {
        defer { droppedUntold = 0 }
        return droppedUntold
    }

    /// Digital silence: no sample of any channel beyond ±1 step of 16 bits (−90 dBFS) at 16 bits
    /// and deeper, none but 0 below.
    static func isSilent(_ f: DecodedFrame) -> Bool {
        let bits = f.format.bitsPerSample
        guard (1...32).contains(bits), f.samples > 0 else { return false }
        let limit: Int32 = bits >= 16 ? 1 << Int32(bits - 16) : 0
        for c in 0..<f.format.channels {
            guard let plane = f.planes[c] else { return false }
            for i in 0..<f.samples where plane[i] > limit || plane[i] < -limit { return false }
        }
        return true
    }
}
