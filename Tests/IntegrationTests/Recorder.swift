import Foundation
import Support

/// Records the rig's null sink monitor with parec (mono, 16-bit, 44.1 kHz, low latency) and
/// keeps every sample with the monotonic time it arrived, so a test can ask what was heard when.
final class Recorder: @unchecked Sendable {
    static let rate = 44100
    private let process = Process()
    private let lock = NSLock()
    private var samples: [Int16] = []
    /// (arrival time in monotonic µs, sample count after that chunk)
    private var marks: [(Int64, Int)] = []
    private var carry: UInt8? = nil
    /// The source recorded.
    let source: String
    /// The recording process (parec), as the sound server knows its stream.
    var pid: Int32 { process.processIdentifier }

    /// Records `source` (default: the null sink's monitor) of `sound` (nil: the rig's own sound server).
    init(rig: Rig, sound: Rig.Sound? = nil, source: String? = nil) throws {
        self.source = source ?? sound?.monitor ?? rig.info.monitor
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["parec", "-d", self.source, "--raw", "--format=s16le", "--rate=\(Recorder.rate)",
                             "--channels=1", "--latency-msec=10"]
        process.environment = rig.clientEnvironment(sound)
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let handle = out.fileHandleForReading
        Thread.detachNewThread { [self] in
            while true {
                let data = handle.availableData
                if data.isEmpty { return }
                let now = monotonicUs()
                lock.lock()
                var bytes = [UInt8](data)
                if let c = carry { bytes.insert(c, at: 0); carry = nil }
                if bytes.count % 2 == 1 { carry = bytes.removeLast() }
                for i in stride(from: 0, to: bytes.count, by: 2) {
                    samples.append(Int16(bitPattern: UInt16(bytes[i]) | UInt16(bytes[i + 1]) << 8))
                }
                marks.append((now, samples.count))
                lock.unlock()
            }
        }
    }

    deinit { stop() }

    func stop() {
        if process.isRunning { process.terminate(); process.waitUntilExit() }
    }

    /// The monotonic time at which sample `index` left the sink, by the latest bound the chunks
    /// give. Every later sample left at least 1/rate after it (more across a gap), and a chunk
    /// arrives no earlier than its last sample left, so each chunk k of the next second bounds it
    /// from above by arrival(k) − (k's last sample − index) / rate. The least of these is the
    /// truth once one chunk came promptly: a parec delayed by a busy machine delivers late chunks,
    /// not late samples.
    func time(ofSample index: Int) -> Int64 {
        lock.lock(); defer { lock.unlock() }
        guard let first = marks.firstIndex(where: { $0.1 > index }) else { return marks.last?.0 ?? 0 }
        var best = Int64.max
        for (arrival, after) in marks[first...] {
            guard arrival <= marks[first].0 + 1_000_000 else { break }
            // The chunk's last sample is after − 1.
            best = min(best, arrival - Int64(after - 1 - index) * 1_000_000 / Int64(Recorder.rate))
        }
        return best
    }

    var count: Int { lock.lock(); defer { lock.unlock() }; return samples.count }

    /// The index of the first sample that arrived at or after `us`.
    func index(atTime us: Int64) -> Int {
        lock.lock(); defer { lock.unlock() }
        var prev = 0
        for m in marks {
            if m.0 >= us { return prev }
            prev = m.1
        }
        return samples.count
    }

    func window(_ start: Int, _ length: Int) -> [Int16] {
        lock.lock(); defer { lock.unlock() }
        let s = max(0, min(start, samples.count)), e = max(s, min(start + length, samples.count))
        return Array(samples[s..<e])
    }

    /// The candidate tone that dominates the last `ms` of recording, or nil for silence/noise.
    func recentTone(ms: Int = 300, candidates: [Int]) -> Int? {
        let n = Recorder.rate * ms / 1000
        return Tone.dominant(window(count - n, n), rate: Recorder.rate, candidates: candidates)
    }

    /// Waits up to `timeout` s for `tone` to dominate the newest 200 ms; returns when it did.
    func waitForTone(_ tone: Int, candidates: [Int], timeout: Double) -> Int64? {
        let deadline = monotonicUs() + Int64(timeout * 1_000_000)
        while monotonicUs() < deadline {
            if recentTone(ms: 200, candidates: candidates) == tone { return monotonicUs() }
            usleep(20_000)
        }
        return nil
    }

    /// When `tone` was first heard from `fromUs` on (the middle of its first 50 ms), or nil.
    func firstHeard(_ tone: Int, candidates: [Int], fromUs: Int64) -> Int64? {
        let start = index(atTime: fromUs)
        let all: [Int16] = { lock.lock(); defer { lock.unlock() }; return samples }()
        return Tone.firstWindow(of: tone, in: all, from: start, rate: Recorder.rate, candidates: candidates)
            .map { time(ofSample: $0) }
    }

    func rms(_ w: [Int16]) -> Double {
        guard !w.isEmpty else { return 0 }
        return (w.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(w.count)).squareRoot() / 32768
    }
}

enum Tone {
    /// The middle sample of the first 50 ms window (stepping 10 ms from `from`) that `tone`
    /// dominates, or nil.
    static func firstWindow(of tone: Int, in samples: [Int16], from: Int, rate: Int, candidates: [Int]) -> Int? {
        let window = rate / 20, step = rate / 100
        var idx = max(0, from)
        while idx + window <= samples.count {
            if dominant(Array(samples[idx..<(idx + window)]), rate: rate, candidates: candidates) == tone {
                return idx + window / 2
            }
            idx += step
        }
        return nil
    }

    /// Goertzel power at each candidate; the winner must hold most of the signal's energy.
    static func dominant(_ w: [Int16], rate: Int, candidates: [Int]) -> Int? {
        guard w.count >= rate / 50 else { return nil }
        let x = w.map { Double($0) / 32768 }
        let energy = x.reduce(0) { $0 + $1 * $1 }
        guard energy / Double(x.count) > 1e-4 else { return nil }  // silence
        var best: (Int, Double)? = nil
        for f in candidates {
            let k = 2 * cos(2 * Double.pi * Double(f) / Double(rate))
            var s1 = 0.0, s2 = 0.0
            for v in x { let s = v + k * s1 - s2; s2 = s1; s1 = s }
            let power = (s1 * s1 + s2 * s2 - k * s1 * s2) * 2 / Double(x.count)
            if best == nil || power > best!.1 { best = (f, power) }
        }
        // A pure tone's Goertzel power at its frequency ≈ its energy; mixtures score lower.
        guard let b = best, b.1 > 0.5 * energy else { return nil }
        return b.0
    }
}
