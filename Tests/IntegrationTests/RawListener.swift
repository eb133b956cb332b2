import Foundation
import Net
import Support
@testable import Audio

/// A second listener of the rig's Icecast stream, independent of the bridge's player: libcurl →
/// libFLAC, no join skip, no sound server, every byte decoded as it arrives. It places each
/// sample on the monotonic clock at the time it left the server (its "on-time" instant), so a
/// test can measure the server's own part of the stream delay: Mopidy's event → that audio
/// leaving Icecast.
///
/// On-time: a sample at stream position p left the server at origin + p, where origin is the
/// smallest (arrival − position) of the frames within 5 s of it. Icecast's connect burst and Ogg
/// pages arrive early or late as wholes; the earliest-arriving edge is the live one. Only nearby
/// frames count because the rig's encoder runs on a clock of its own that can drift from ours
/// (by ~100 ms over one test run after an Icecast stall): an all-time minimum would date later
/// audio too early. The bridge uses the same rule for its local part (its origin creeps to
/// follow such a clock), so the two measures meet at the same instant.
final class RawListener: StreamingGetDelegate, @unchecked Sendable {
    private let ring = ByteRing(capacity: 1 << 20)
    private let lock = NSLock()
    private var samples: [Int16] = []  // channel 0, as 16-bit
    private var rate = 0
    private var originUs: Int64? = nil
    /// (samples decoded up to the frame's end, arrival − position of that end in µs), per frame.
    private var bounds: [(end: Int, us: Int64)] = []
    private var stopped = false
    /// Signalled by each of the two threads as it ends. They hold the listener until then:
    /// call `stop`.
    private let done = DispatchSemaphore(value: 0)

    init(url: String, user: String, password: String, ogg: Bool) {
        Thread.detachNewThread { [self] in
            _ = StreamingGet().perform(url: url, options: .init(user: user, password: password), delegate: self)
            ring.finish()
            done.signal()
        }
        // Bytes as they arrive, cut into units and decoded as the bridge's decoder does (each unit
        // dated by the read that completed it: the same dating as the bridge's, so the two
        // measures meet).
        Thread.detachNewThread { [self] in
            var reader = FrameReader(ogg: ogg)
            var input = FLACDecoder.Input()
            var scratch = [UInt8](repeating: 0, count: 4096)
            let decoder = FLACDecoder(corruption: {})
            while let decoder, case .bytes(let n) = scratch.withUnsafeMutableBytes({ ring.read(into: $0, oneArrival: true) }) {
                reader.feed(scratch[0..<n], arrival: Instant(ms: ring.lastReadArrivalMs))
                while let u = reader.next() { input.append(u) }
                while let outcome = decoder.step(&input, frame: { f, arrival in keep(f, arrivalMs: arrival.ms) }) {
                    if case .failed = outcome { break }
                }
            }
            done.signal()
        }
    }

    private func keep(_ f: DecodedFrame, arrivalMs: Int) {
        let arrivalUs = Int64(arrivalMs) * 1000
        let shift = Int32(f.format.bitsPerSample - 16)
        guard let plane = f.planes[0] else { return }
        lock.lock()
        defer { lock.unlock() }
        if rate != f.format.sampleRate { samples = []; bounds = []; originUs = nil; rate = f.format.sampleRate }
        for i in 0..<f.samples {
            let v = shift >= 0 ? plane[i] >> shift : plane[i] << -shift
            samples.append(Int16(clamping: v))
        }
        let bound = arrivalUs - Int64(samples.count) * 1_000_000 / Int64(rate)
        originUs = min(originUs ?? bound, bound)
        bounds.append((samples.count, bound))
    }

    func stop() {
        lock.lock()
        let first = !stopped
        stopped = true
        lock.unlock()
        guard first else { return }
        ring.cancel()
        done.wait()
        done.wait()
    }

    /// Seconds of audio decoded so far.
    var seconds: Double {
        lock.lock(); defer { lock.unlock() }
        return rate > 0 ? Double(samples.count) / Double(rate) : 0
    }

    /// The on-time instant (monotonic µs) of the first 50 ms in which `tone` dominates, searching
    /// from the audio that was on time at `fromUs`; nil if it has not arrived.
    func onTimeUs(ofTone tone: Int, candidates: [Int], fromUs: Int64) -> Int64? {
        lock.lock()
        guard let origin = originUs, rate > 0 else { lock.unlock(); return nil }
        let all = samples, frames = bounds, r = rate
        lock.unlock()
        // The all-time origin dates audio no later than the truth, so searching from a second
        // before what it puts at `fromUs` misses nothing.
        let from = max(0, Int((fromUs - origin - 1_000_000) * Int64(r) / 1_000_000))
        guard let index = Tone.firstWindow(of: tone, in: all, from: from, rate: r, candidates: candidates) else { return nil }
        let near = frames.filter { abs($0.end - index) <= 5 * r }.map(\.us).min() ?? origin
        return near + Int64(index) * 1_000_000 / Int64(r)
    }

    /// The longest run of silence (samples within ±100 of zero, as `Recorder.gaps` counts it) in
    /// the audio that was on time from `fromUs` to `toUs` (dated as `onTimeUs` dates it), ms:
    /// the server's own silence, which every listener hears. 0 when none of it has arrived.
    func longestSilenceMs(onTimeFromUs fromUs: Int64, toUs: Int64) -> Double {
        lock.lock()
        guard let origin = originUs, rate > 0 else { lock.unlock(); return 0 }
        let all = samples, frames = bounds, r = Int64(rate)
        lock.unlock()
        // Dated by the frames that arrived nearest (as `onTimeUs`), within 5 s of the window.
        let near = frames.filter { abs(origin + Int64($0.end) * 1_000_000 / r - fromUs) <= 5_000_000 }.map(\.us).min() ?? origin
        let a = max(0, min(all.count, Int((fromUs - near) * r / 1_000_000)))
        let b = max(a, min(all.count, Int((toUs - near) * r / 1_000_000)))
        return Double(SwitchHearing.longestRun(all[a..<b], within: 100)) * 1000 / Double(r)
    }

    // MARK: - StreamingGetDelegate (on the network thread)

    func streamResponse(status: Int, contentType: String?) -> Bool { status == 200 }

    func streamData(_ bytes: UnsafeRawBufferPointer) -> Bool { ring.write(bytes) }

    func streamShouldAbort() -> Bool {
        lock.lock(); defer { lock.unlock() }
        return stopped
    }
}
