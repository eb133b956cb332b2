// The fuzz build (scripts/fuzz playout) compiles this file with Support's into one module.
#if canImport(Support)
import Support
#endif

extension Playout {
    /// How far what leaves the speaker here lags the stream's live edge as it leaves the server,
    /// from when each decoded frame's bytes arrived. One per connection (a switch's carries on).
    ///
    /// A frame at stream position p (its end) whose bytes arrived at a would have arrived at
    /// origin + p had every page come on time. Pages that waited anywhere (a burst, a stall, the
    /// kernel's buffer, the ring) only give later values of a − p; the punctual ones give the
    /// least, so the origin is the minimum over frames. The newest decoded audio is then
    /// now − origin − position late, and the delay is that plus what is decoded and not yet
    /// heard. Each part moves as the others move the opposite way, so the sum stays constant while
    /// playback is smooth and grows by exactly what an underrun or stall loses.
    struct Delay {
        /// How fast the origin creeps later per ms of arrivals (`StreamTuning.originCreep`).
        let creep: Double
        /// Weight of each new delay sample (`StreamTuning.delaySmoothing`).
        let smoothing: Double
        /// A sample this far above the smoothed delay is taken whole: an underrun adds its loss
        /// at once (smoothed, every title in the next second would come before its music).
        static let wholeRiseMs = 100.0
        /// Audio of this connection so far, decoded or skipped: where the next frame begins.
        private(set) var position = StreamPosition.start
        /// When position 0 would have arrived had every page come on time, monotonic ms.
        private(set) var originMs: Double? = nil
        private var lastArrival = Instant(ms: 0)
        private var smoothedMs = 0.0
        /// How late the newest decoded audio was at the last `delayMs` (for the log).
        private(set) var lateMs = 0.0

        init(creep: Double = StreamTuning.originCreep, smoothing: Double = StreamTuning.delaySmoothing) {
            self.creep = creep
            self.smoothing = smoothing
        }

        /// A frame of `samples` at `rate` was decoded from bytes that arrived at `arrival`
        /// (never earlier than the truth).
        mutating func decoded(samples: Int, rate: Int, arrival: Instant) {
            guard rate > 0 else { return }
            position = position.advanced(samples: samples, rate: rate)
            let bound = Double(arrival.ms) - position.ms
            // Creeps later between bounds, so a server clock slower than ours is followed
            // instead of pinning the origin to an old minimum.
            let crept = originMs.map { $0 + Double(max(0, arrival - lastArrival)) * creep } ?? bound
            originMs = min(crept, bound)
            lastArrival = arrival
        }

        /// `samples` before the next frame were skipped undecoded: positions passed, as if
        /// decoded (their arrival says nothing: they came in a burst).
        mutating func skipped(samples: Int, rate: Int) { position = position.advanced(samples: samples, rate: rate) }

        /// When the audio at `p` would have arrived had every page come on time; nil before the
        /// first frame.
        func onTime(at p: StreamPosition) -> Instant? {
            guard let origin = originMs else { return nil }
            let at = origin + p.ms
            return at.isFinite && abs(at) < 1e15 ? Instant(ms: Int(at)) : nil
        }

        /// Heard again after a pause or a drop: the next sample is taken whole, not smoothed
        /// from before (the sound server's buffer starts again from empty, or fell at once).
        mutating func resumed() { smoothedMs = 0 }

        /// The delay at `now`, lightly smoothed (the sound server's reports and the write pieces
        /// jitter) but for a rise of more than `wholeRiseMs`; nil before the first frame.
        /// `soundServerMs`: written and not yet heard; `heldMs`: decoded and not yet written.
        mutating func delayMs(now: Instant, soundServerMs: Int, heldMs: Int) -> Int? {
            guard let origin = originMs else { return nil }
            lateMs = Double(now.ms) - origin - position.ms
            let raw = max(0, lateMs) + Double(max(0, soundServerMs)) + Double(max(0, heldMs))
            let whole = smoothedMs == 0 || raw > smoothedMs + Self.wholeRiseMs
            smoothedMs = whole ? raw : smoothedMs + (raw - smoothedMs) * smoothing
            return smoothedMs.isFinite && smoothedMs < 1e15 ? Int(smoothedMs) : nil
        }
    }
}
