@testable import Audio
import Bridge
import Foundation
import XCTest

/// Synthetic music in the stream's own form (planar Int32, 16-bit, 44.1 kHz stereo), fed to the
/// detector in 4096-sample frames as libFLAC hands them over.
struct Synth {
    static let rate = 44100
    var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
    private(set) var mono: [Float] = []

    var ms: Double { Double(mono.count) * 1000 / Double(Self.rate) }

    mutating func random() -> Float {
        seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Float(Int64(bitPattern: seed >> 11) % 2_000_001 - 1_000_000) / 1_000_000
    }

    /// `seconds` of a sound at RMS `rms`: a function of time to amplitude ±1 (scaled to `rms`
    /// by its own RMS over the piece).
    mutating func add(_ seconds: Double, rms: Float, _ sound: (inout Synth, Double) -> Float) {
        let n = Int(seconds * Double(Self.rate))
        var piece = [Float](repeating: 0, count: n)
        for i in 0..<n { piece[i] = sound(&self, Double(mono.count + i) / Double(Self.rate)) }
        let actual = (piece.reduce(0) { $0 + $1 * $1 } / Float(max(1, n))).squareRoot()
        mono += piece.map { actual > 0 ? $0 * rms / actual : 0 }
    }

    static func tone(_ f: Double) -> (inout Synth, Double) -> Float { { _, t in Float(sin(2 * .pi * f * t)) } }
    static func chord(_ fs: [Double]) -> (inout Synth, Double) -> Float {
        { _, t in Float(fs.reduce(0) { $0 + sin(2 * .pi * $1 * t) }) }
    }
    static var noise: (inout Synth, Double) -> Float { { s, _ in s.random() } }
    static var silence: (inout Synth, Double) -> Float { { _, _ in 0 } }

    /// `a` fading out while `b` fades in over `seconds` (equal power), each at `rms`.
    mutating func crossfade(_ seconds: Double, rms: Float, _ a: @escaping (inout Synth, Double) -> Float,
                            _ b: @escaping (inout Synth, Double) -> Float) {
        let start = Double(mono.count) / Double(Self.rate)
        let scaleA = Self.rmsOf(a, self), scaleB = Self.rmsOf(b, self)
        let n = Int(seconds * Double(Self.rate))
        for i in 0..<n {
            let t = start + Double(i) / Double(Self.rate)
            let x = Double(i) / Double(n) * .pi / 2
            mono.append(rms * (Float(cos(x)) * a(&self, t) / scaleA + Float(sin(x)) * b(&self, t) / scaleB))
        }
    }

    static func rmsOf(_ s: (inout Synth, Double) -> Float, _ from: Synth) -> Float {
        var copy = from
        var sum: Float = 0
        for i in 0..<4410 { let x = s(&copy, Double(i) / Double(rate)); sum += x * x }
        return max(1e-6, (sum / 4410).squareRoot())
    }

    /// Feeds everything to `detector` as 16-bit stereo frames from stream position `startMs`.
    func feed(_ detector: inout BoundaryDetector, startMs: Double = 0) {
        frames(startMs: startMs) { planes, count, atMs in
            detector.add(planes: planes, channels: 2, samples: count, bits: 16, sampleRate: Self.rate, atMs: atMs)
        }
    }

    func frames(startMs: Double, _ body: (UnsafePointer<UnsafePointer<Int32>?>, Int, Double) -> Void) {
        let ints = mono.map { Int32(max(-32768, min(32767, ($0 * 32767).rounded()))) }
        ints.withUnsafeBufferPointer { buf in
            var i = 0
            while i < ints.count {
                let count = min(4096, ints.count - i)
                let p: [UnsafePointer<Int32>?] = [buf.baseAddress! + i, buf.baseAddress! + i]
                p.withUnsafeBufferPointer { body($0.baseAddress!, count, startMs + Double(i) * 1000 / Double(Self.rate)) }
                i += count
            }
        }
    }
}

final class BoundaryDetectorTests: XCTestCase {
    typealias Sound = (inout Synth, Double) -> Float

    /// Three seconds of `a`, then `b` for three seconds: where is the boundary found when it
    /// is expected `errorMs` away from the truth (3000 ms)?
    func look(_ build: (inout Synth) -> Void, expectedAtMs: Double = 3000, windowMs: Double = 1500) -> BoundaryDetector.Found? {
        var s = Synth()
        build(&s)
        var d = BoundaryDetector()
        s.feed(&d, startMs: 12_345)
        XCTAssertTrue(d.isReady(nearMs: 12_345 + expectedAtMs, windowMs: windowMs))
        return d.find(nearMs: 12_345 + expectedAtMs, windowMs: windowMs).map {
            var f = $0
            f.positionMs -= 12_345
            return f
        }
    }

    func assertFound(_ found: BoundaryDetector.Found?, at ms: Double, within tolerance: Double = 15,
                     _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        guard let found else { return XCTFail("\(what): no clear boundary", file: file, line: line) }
        XCTAssertEqual(found.positionMs, ms, accuracy: tolerance, "\(what): score \(found.score) vs \(found.runnerUp)",
                       file: file, line: line)
    }

    func testAClearBoundaryIsFoundWithinAFewMilliseconds() {
        let cases: [(String, (inout Synth) -> Void)] = [
            ("tone to tone, same level", { $0.add(3, rms: 0.35, Synth.tone(440)); $0.add(3, rms: 0.35, Synth.tone(660)) }),
            ("noise to chord, same level", {
                $0.add(3, rms: 0.2, Synth.noise); $0.add(3, rms: 0.2, Synth.chord([261.6, 329.6, 392]))
            }),
            ("chord to noise, same level", {
                $0.add(3, rms: 0.2, Synth.chord([220, 277.2, 329.6])); $0.add(3, rms: 0.2, Synth.noise)
            }),
            ("tone to tone, cut with a click and a 20 ms gap", {
                $0.add(3, rms: 0.35, Synth.tone(440)); $0.add(0.002, rms: 0.9, Synth.noise); $0.add(0.018, rms: 0, Synth.silence)
                $0.add(2.98, rms: 0.35, Synth.tone(660))
            }),
            ("a level jump, same sound", { $0.add(3, rms: 0.3, Synth.noise); $0.add(3, rms: 0.06, Synth.noise) }),
            ("a short gap between like tones", {
                $0.add(3, rms: 0.3, Synth.tone(440)); $0.add(0.08, rms: 0, Synth.silence); $0.add(2.92, rms: 0.3, Synth.tone(440))
            }),
            ("the old track stops, the new one starts with silence", {
                $0.add(3, rms: 0.3, Synth.chord([330, 440])); $0.add(3, rms: 0, Synth.silence)
            }),
        ]
        for (what, build) in cases {
            for error in [-1200.0, -300, 0, 400, 1200] {
                assertFound(look(build, expectedAtMs: 3000 + error), at: 3000, "\(what), expected \(error) ms off")
            }
        }
    }

    /// From a fall into a long silence to the next track's sound: two boundaries a second apart,
    /// neither clear; the same for a sudden quiet passage just before the change.
    func testTwoBoundariesNearEachOtherAreNotTaken() {
        XCTAssertNil(look {
            $0.add(3, rms: 0.3, Synth.tone(440)); $0.add(1, rms: 0, Synth.silence); $0.add(2, rms: 0.3, Synth.tone(660))
        })
        XCTAssertNil(look {
            $0.add(2.2, rms: 0.3, Synth.noise); $0.add(0.8, rms: 0.03, Synth.noise); $0.add(3, rms: 0.3, Synth.noise)
        })
    }

    /// Until the first boundary is found the look reaches 2.5 s either side: a server 1.5 s
    /// slower than `server_delay_ms` says is found at once.
    func testTheFirstLookReachesFartherOff() {
        for error in [-2200.0, 2200] {
            // Just what the look needs (the detector keeps 8 s).
            var s = Synth()
            s.add(error < 0 ? 5 : 0.8, rms: 0.3, Synth.tone(440)); s.add(error < 0 ? 0.8 : 5, rms: 0.3, Synth.tone(660))
            let boundary = error < 0 ? 5000.0 : 800
            var d = BoundaryDetector()
            s.feed(&d)
            assertFound(d.find(nearMs: boundary + error, windowMs: 2500), at: boundary, "expected \(error) ms off")
            XCTAssertNil(d.find(nearMs: boundary + error, windowMs: 1500), "found outside the window")
        }
    }

    func testAmbiguousChangesFindNothing() {
        for (what, build) in ambiguous(seed: 1) {
            XCTAssertNil(look(build), what)
        }
    }

    /// 30 ambiguous changes in a row (gapless, crossfades, silence, steady noise, a live
    /// recording's murmur) move the learned delay less than 50 ms.
    func testThirtyAmbiguousChangesMoveTheEstimateLessThan50ms() {
        var learner = ServerDelayLearner(startMs: 400)
        var n = 0
        for round in 0..<6 {
            for (what, build) in ambiguous(seed: UInt64(round + 7)) {
                let found = look(build, expectedAtMs: 3000 + Double(round * 150 - 400))
                if let found { print("ambiguous \(what) round \(round): found at \(found.positionMs)") }
                learner.heard(sampleMs: found.map { learner.estimateMs + Int($0.positionMs - 3000) }, atMs: n)
                n += 1
            }
        }
        XCTAssertGreaterThanOrEqual(n, 30)
        XCTAssertLessThan(abs(learner.estimateMs - 400), 50, "moved by \(learner.estimateMs - 400) ms over \(n) changes")
    }

    /// The decoder thread's side: a request is answered once the audio around it is decoded,
    /// with the offset in stream positions. Position p arrives on time at origin + p: origin
    /// 1000 ms; the boundary at position 3000 left the server at 4000 ms. The server switched at
    /// 3600 ms and was thought to take 700 ms: expected at 4300 ms, position 3300.
    func testTheWatchAnswersInStreamPositions() {
        var s = Synth()
        s.add(3, rms: 0.3, Synth.tone(440)); s.add(3, rms: 0.3, Synth.tone(660))
        let late = BoundaryRequest(changedAtMs: 3600, serverDelayMs: 700, windowMs: 1500)
        let lost = BoundaryRequest(changedAtMs: -9000, serverDelayMs: 700, windowMs: 1500)
        var requests = [late, lost]
        var watch = BoundaryDetector.Watch()
        var answers: [BoundaryHeard] = []
        var answeredAtMs: Double? = nil
        let format = AudioFormat(sampleRate: Synth.rate, channels: 2, bitsPerSample: 16)
        s.frames(startMs: 0) { planes, count, atMs in
            let f = DecodedFrame(format: format, samples: count, planes: planes)
            watch.decoded(f, at: StreamPosition(ms: atMs), requests: requests, originMs: 1000, now: Instant(ms: 0)) {
                answers.append($0)
                if $0.request == late { answeredAtMs = atMs }
            }
            requests = []
        }
        XCTAssertEqual(answers.count, 2)
        XCTAssertEqual(answers.first { $0.request == lost }?.offsetMs, .some(nil), "audio never kept is no boundary")
        let offset = try? XCTUnwrap(answers.first { $0.request == late }?.offsetMs)
        XCTAssertEqual(Double(offset ?? 0), -300, accuracy: 15)
        // Answered as soon as 1.5 s + 250 ms past the expected moment was decoded, not later.
        XCTAssertEqual(answeredAtMs ?? 0, 3300 + 1750, accuracy: 100)
    }

    func ambiguous(seed: UInt64) -> [(String, (inout Synth) -> Void)] {
        let f = 300 + Double(seed % 5) * 70
        return [
            ("gapless: one tone split across two files", { $0.add(6, rms: 0.3, Synth.tone(f)) }),
            ("gapless: one chord", { $0.add(6, rms: 0.2, Synth.chord([f, f * 1.25, f * 1.5])) }),
            ("a crossfade between tones", {
                $0.add(1.5, rms: 0.3, Synth.tone(f)); $0.crossfade(3, rms: 0.3, Synth.tone(f), Synth.tone(f * 1.5))
                $0.add(1.5, rms: 0.3, Synth.tone(f * 1.5))
            }),
            ("a crossfade from noise to a chord", {
                $0.seed = seed
                $0.add(1.5, rms: 0.2, Synth.noise); $0.crossfade(3, rms: 0.2, Synth.noise, Synth.chord([f, f * 1.2]))
                $0.add(1.5, rms: 0.2, Synth.chord([f, f * 1.2]))
            }),
            ("silence on both sides", { $0.add(6, rms: 0, Synth.silence) }),
            ("steady noise", { $0.seed = seed; $0.add(6, rms: 0.25, Synth.noise) }),
        ]
    }
}
