// The fuzz build (scripts/fuzz playout) compiles this file with Support's into one module.
#if canImport(Support)
import Support
#endif

extension Playout {
    /// The cushion kept on purpose against stalls (`Drops.extraMs`), learned from the link and
    /// carried from one connection to the next. It grows at once when the link shows it needs
    /// more: an arrival gap beyond the sound server's buffer and the link's own rhythm (a stall),
    /// or an underrun (what the output lacked, on top of the backlog it had). A stall that ran the
    /// sound out leaves its backlog, which is kept (`rebufferMs` holds the music until there is
    /// enough); one ridden out leaves none, and the next announced change makes it up (`Pad`).
    /// After `cleanMs` with no such sign it goes back to 0. Never above `capMs`.
    struct Target: Equatable {
        /// The most kept: a stall longer than this is not ridden out vs. how far behind the
        /// house a bad link may leave this computer.
        let capMs: Int
        /// A clean link this long lets the cushion go.
        let cleanMs: Int
        /// An arrival gap up to this is ridden out by the sound server's buffer alone.
        let bufferMs: Int
        /// A gap longer than the link's usual longest by more than this is a stall.
        let slackMs: Int
        private(set) var targetMs = 0
        /// When the link last showed it needs the cushion.
        private(set) var neededAt: Instant? = nil
        private var lastArrival: Instant? = nil
        /// The longest gap between reads on this link as it is, fading with time (`usualFadeMs`):
        /// a stream whose Ogg pages hold most of a second of quiet audio comes that far apart.
        private(set) var usualGapMs = 0.0
        /// The last gap between reads, ms (for the log).
        private(set) var lastGapMs = 0

        init(capMs: Int = StreamTuning.cushionCapMs, cleanMs: Int = StreamTuning.cushionCleanMs,
             bufferMs: Int = StreamTuning.sinkBufferMs, slackMs: Int = StreamTuning.cushionStallSlackMs) {
            self.capMs = max(0, capMs)
            self.slackMs = max(0, slackMs)
            self.cleanMs = max(0, cleanMs)
            self.bufferMs = max(0, bufferMs)
            usualGapMs = Self.unknownRhythm(bufferMs: self.bufferMs)
        }

        /// Bytes of a decoded frame arrived at `at` (the same for every frame of one read): a gap
        /// before them beyond the buffer, and beyond the usual longest gap by `slackMs`, is a stall.
        mutating func arrived(at: Instant) {
            defer { lastArrival = max(lastArrival ?? at, at) }
            guard let last = lastArrival else { return }
            let gap = at - last
            guard gap > 0 else { return }
            lastGapMs = gap
            if gap > bufferMs && Double(gap) > usualGapMs + Double(slackMs) { need(gap, at: at) }
            // Every gap counts in the rhythm: one that changes for good (another stream, the
            // server's encoder) is learned at once, and a stall fades within the reads before
            // the next.
            usualGapMs = max(Double(gap), usualGapMs * Self.decay(Double(gap) / Self.usualFadeMs))
        }

        /// The usual longest gap falls to 1/e of itself in this long: a stall's own gap is
        /// forgotten before the next stall (a tenth of it in 7 s) vs. a link's own rhythm
        /// forgotten between two of its long gaps (reads come at least every second).
        static let usualFadeMs = 3000.0

        /// e^−x for x ≥ 0, without the C library: halved until small, a Taylor series, squared
        /// back (relative error below 1e−10 for any gap).
        static func decay(_ x: Double) -> Double {
            guard x > 0 else { return 1 }
            guard x < 700 else { return 0 }
            var y = x, halvings = 0
            while y > 1.0 / 1024 {
                y /= 2
                halvings += 1
            }
            var r = 1 - y * (1 - y / 2 * (1 - y / 3 * (1 - y / 4)))
            for _ in 0..<halvings { r *= r }
            return r
        }

        /// The output had nothing to play for `starvedMs` at `now`, with `backlogMs` waiting in
        /// the input before the stall: a cushion of both would have ridden it out.
        mutating func underran(starvedMs: Int, backlogMs: Int, at now: Instant) {
            guard starvedMs > 0 else { return }
            need(max(0, backlogMs).adding(saturating: starvedMs), at: now)
        }

        /// A new connection: the gap before its first byte is no stall of the link, and its
        /// rhythm is not known yet.
        mutating func reconnected() {
            lastArrival = nil
            usualGapMs = Self.unknownRhythm(bufferMs: bufferMs)
        }

        /// The usual longest gap before the reads show it: twice the buffer (the first page after
        /// a connect burst can come a page and more later), fading within seconds to what they
        /// show; a longer stall this early is seen by the underrun it causes.
        static func unknownRhythm(bufferMs: Int) -> Double { 2 * Double(bufferMs) }

        /// The target at `now`: 0 once the link has been clean for `cleanMs`.
        mutating func current(at now: Instant) -> Int {
            if let at = neededAt, now - at >= cleanMs {
                targetMs = 0
                neededAt = nil
            }
            return targetMs
        }

        private mutating func need(_ ms: Int, at: Instant) {
            targetMs = min(capMs, max(targetMs, ms))
            neededAt = max(neededAt ?? at, at)
        }
    }

    /// The way back towards live after a stall's burst: frames of digital silence dropped. Each
    /// stall that underran leaves the listener behind by what it lost, for good: the burst waits
    /// in the input, and so does every byte after it. How long each frame's bytes waited is that
    /// excess (on a clean link, about a write). When even the least wait of the last `windowMs` is
    /// more than `marginMs` above the cushion (`extraMs`), whole frames of digital silence (a
    /// pause between tracks, the silent start of one) are dropped until a frame waited no more
    /// than half the margin above it. Never by changing speed or pitch; a frame that waited was
    /// decoded while the sound server was full, so a drop cannot cause an underrun.
    struct Drops {
        /// A wait above the target by at most this starts no drop: jitter and a busy CPU drop
        /// nothing vs. how close to live the way back ends (it ends at half the margin).
        let marginMs: Int
        /// Wait kept on purpose (the cushion against the next stall).
        var extraMs: Int
        /// The least wait must hold for this long before a drop starts.
        let windowMs: Int
        /// (when, how long it waited) of each frame within the last `windowMs`.
        private var recent: [(at: Instant, waitedMs: Int)] = []
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
        func excessMs(at now: Instant) -> Int? {
            guard let first = recent.first, now - first.at >= windowMs,
                  let least = recent.lazy.map(\.waitedMs).min() else { return nil }
            return least.subtracting(saturating: extraMs)
        }

        /// A decoded frame of `frameMs`, whose bytes arrived `waitedMs` before `now`: true when it
        /// is dropped instead of played. `silent` is asked only while a run of drops is under way.
        mutating func drop(frameMs: Int, waitedMs: Int, silent: () -> Bool, at now: Instant) -> Bool {
            let waited = max(0, waitedMs)
            recent.append((now, waited))
            // Keep the newest frame older than the window: the span it covers is then known.
            while recent.count > 1, now - recent[1].at >= windowMs { recent.removeFirst() }
            let over = waited.subtracting(saturating: extraMs)
            if over <= marginMs / 2 { dropping = false }
            if !dropping, let excess = excessMs(at: now), excess > marginMs { dropping = true }
            guard dropping, frameMs > 0, over.subtracting(saturating: frameMs) >= marginMs / 2, silent() else { return false }
            droppedMs = droppedMs.adding(saturating: frameMs)
            droppedUntold = droppedUntold.adding(saturating: frameMs)
            return true
        }

        /// The waits seen so far no longer say what waits (a cut took from the backlog): the
        /// excess is unknown until the frames span the window again.
        mutating func restartWindow() {
            recent.removeAll(keepingCapacity: true)
            dropping = false
        }

        /// What was dropped since the last call, ms (for the log and the figures).
        mutating func takeDropped() -> Int {
            defer { droppedUntold = 0 }
            return droppedUntold
        }
    }
}
