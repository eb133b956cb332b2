/// How far what leaves the speaker here lags the stream's live edge as it leaves the server,
/// from when each decoded frame's bytes arrived. Pure: arrival times, the clock and the sound
/// server's latency are inputs. One per connection, on the decoder thread.
///
/// A frame at stream position p (its end) whose bytes arrived at a would have arrived at
/// origin + p had every page come on time. Pages that waited anywhere (a burst, a stall, the
/// kernel's buffer, the ring) only give later values of a − p; the punctual ones give the least,
/// so the origin is the minimum over frames. The newest decoded audio is then
/// now − origin − decoded late, and the delay is that plus what is decoded and not yet heard.
/// Each part moves as the others move the opposite way, so the sum stays constant while playback
/// is smooth and grows by exactly what an underrun or stall loses.
struct HeardDelayEstimator {
    /// How fast the origin creeps later per ms of arrivals (StreamTuning.originCreep).
    let creep: Double
    /// Weight of each new delay sample (StreamTuning.delaySmoothing).
    let smoothing: Double
    /// A sample this far above the smoothed delay is taken whole: an underrun adds its loss at
    /// once, and smoothed it would be counted over a second or more, every title in that time
    /// shown before its music.
    static let wholeRiseMs = 100.0
    /// Audio decoded on this connection, ms (skipped, held, written).
    private(set) var decodedMs = 0.0
    /// When audio position 0 would have arrived had every page come on time, monotonic ms.
    private(set) var onTimeOriginMs: Double? = nil
    private var lastArrivalMs = 0
    private var smoothedMs = 0.0
    /// How late the newest decoded audio was at the last `delayMs` (for the log).
    private(set) var lateMs = 0.0

    init(creep: Double = StreamTuning.originCreep, smoothing: Double = StreamTuning.delaySmoothing) {
        self.creep = creep
        self.smoothing = smoothing
    }

    /// A frame of `samples` at `sampleRate` was decoded from bytes that arrived at `arrivalMs`
    /// (never earlier than the truth).
    mutating func frameDecoded(samples: Int, sampleRate: Int, arrivalMs: Int) {
        guard sampleRate > 0 else { return }
        decodedMs += Double(samples) * 1000 / Double(sampleRate)
        let bound = Double(arrivalMs) - decodedMs
        // Creeps later between bounds, so a server clock slower than ours is followed instead of
        // pinning the origin to an old minimum.
        let crept = onTimeOriginMs.map { $0 + Double(max(0, arrivalMs - lastArrivalMs)) * creep } ?? bound
        onTimeOriginMs = min(crept, bound)
        lastArrivalMs = arrivalMs
    }

    /// When audio at `positionMs` of this connection would have arrived had every page come on
    /// time, monotonic ms; nil before the first frame.
    func onTimeMs(atPositionMs positionMs: Double) -> Int? {
        guard let origin = onTimeOriginMs else { return nil }
        let at = origin + positionMs
        return at.isFinite && abs(at) < 1e15 ? Int(at) : nil
    }

    /// `samples` before the next frame were skipped undecoded: they count as positions passed,
    /// as if decoded (their arrival says nothing: they came in a burst).
    mutating func skipped(samples: Int, sampleRate: Int) {
        guard sampleRate > 0 else { return }
        decodedMs += Double(samples) * 1000 / Double(sampleRate)
    }

    /// Heard again after a pause with the connection kept: the sound server's buffer starts
    /// from empty, so the next sample is taken whole, not smoothed from before the pause.
    mutating func resumed() { smoothedMs = 0 }

    /// The delay at `nowMs`, lightly smoothed (the sound server's reports and the write pieces
    /// jitter) but for a rise of more than `wholeRiseMs`, or nil before the first frame. `soundServerMs`: written to the sound
    /// server and not yet heard; `unwrittenMs`: the rest of the piece being written;
    /// `heldMs`: the join buffer not yet written.
    mutating func delayMs(nowMs: Int, soundServerMs: Int, unwrittenMs: Int, heldMs: Int) -> Int? {
        guard let origin = onTimeOriginMs else { return nil }
        lateMs = Double(nowMs) - origin - decodedMs
        let raw = max(0, lateMs) + Double(soundServerMs + unwrittenMs + heldMs)
        let whole = smoothedMs == 0 || raw > smoothedMs + Self.wholeRiseMs
        smoothedMs = whole ? raw : smoothedMs + (raw - smoothedMs) * smoothing
        return Int(smoothedMs)
    }
}
