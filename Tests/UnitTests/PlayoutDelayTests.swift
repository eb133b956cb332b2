@testable import Audio
import XCTest

/// The heard delay (`Playout.Delay`) against a listener in miniature, in whole milliseconds, that knows the truth. The server sends 100 ms
/// frames (100 samples at 1 kHz); frame k (stream position k·100 to (k+1)·100) left the server at
/// `originMs` + (k+1)·100 and arrives here at `arrival(k)`, never earlier. On joining, the decoder
/// decodes all that has arrived and keeps the newest `keepMs` of it; afterwards it decodes a
/// frame once the frame is here and the sink has room for it. The sink plays in real time and
/// underruns when empty. What is heard at t is position `heard`, which left the server at
/// `originMs` + `heard`: the true delay is t − `originMs` − `heard`.
struct Listener {
    var estimator: Playout.Delay
    let originMs: Int
    let arrival: (Int) -> Int
    var keepMs = 500
    let sinkMs = 500
    private var next = 0
    private var joined = false
    private var heard = 0
    private var buffered = 0
    /// Time the sink ran empty after the join: audio lost to underruns.
    private(set) var lostMs = 0
    /// (time, estimate, truth) after each decoded frame.
    private(set) var samples: [(t: Int, estimate: Int, truth: Int)] = []

    init(smoothing: Double = 1, originMs: Int, arrival: @escaping (Int) -> Int) {
        estimator = Playout.Delay(smoothing: smoothing)
        self.originMs = originMs
        self.arrival = arrival
    }

    mutating func run(untilMs end: Int) {
        for t in 0..<end { step(t) }
    }

    private mutating func step(_ t: Int) {
        if buffered > 0 {
            buffered -= 1
            heard += 1
        } else if joined {
            lostMs += 1
        }
        if !joined {
            guard arrival(0) <= t else { return }
            while arrival(next) <= t { decode() }
            let held = min(keepMs / 100, next)
            heard = (next - held) * 100
            note(t, soundServerMs: 0, heldMs: held * 100)
            buffered = held * 100
            joined = true
            note(t, soundServerMs: buffered, heldMs: 0)
        }
        while arrival(next) <= t && buffered + 100 <= sinkMs {
            decode()
            buffered += 100
            note(t, soundServerMs: buffered, heldMs: 0)
        }
    }

    private mutating func decode() {
        estimator.decoded(samples: 100, rate: 1000, arrival: Instant(ms: arrival(next)))
        next += 1
    }

    private mutating func note(_ t: Int, soundServerMs: Int, heldMs: Int) {
        let e = estimator.delayMs(now: Instant(ms: t), soundServerMs: soundServerMs, heldMs: heldMs)!
        samples.append((t, e, t - originMs - heard))
    }
}

final class PlayoutDelayTests: XCTestCase {
    func assertTracksTheTruth(_ l: Listener, within ms: Int = 1, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertFalse(l.samples.isEmpty, file: file, line: line)
        for s in l.samples where abs(s.estimate - s.truth) > ms {
            return XCTFail("at \(s.t) ms: estimate \(s.estimate), truth \(s.truth)", file: file, line: line)
        }
    }

    /// After the join, pages on time, some a little late (as the network delivers them): the
    /// delay stays what the join left, the 500 ms it kept.
    func testPunctualPagesGiveAConstantDelay() {
        let jitter = [0, 7, 23, 41, 3]
        var l = Listener(originMs: -2000) { k in
            let onTime = -2000 + (k + 1) * 100
            return onTime <= 1000 ? 1000 : onTime + jitter[k % jitter.count]
        }
        l.run(untilMs: 20_000)
        assertTracksTheTruth(l)
        XCTAssertEqual(Set(l.samples.map(\.truth)), [500])
        XCTAssertEqual(l.lostMs, 0)
    }

    /// Icecast's connect burst: 3 s of old audio at once, then live. The burst's audio waited
    /// on the server, and the join keeps 500 ms of it: that 500 ms is the delay, counted once.
    func testABurstIsNotCountedTwice() {
        var l = Listener(originMs: -2000) { k in max(1000, -2000 + (k + 1) * 100) }
        l.run(untilMs: 10_000)
        assertTracksTheTruth(l)
        XCTAssertEqual(l.samples.first?.estimate, 500, "at the join: the held 500 ms")
        XCTAssertEqual(Set(l.samples.map(\.estimate)), [500])
    }

    /// The server stops sending for 2 s, then sends what it held back at once. The sink's 500 ms
    /// rides out part of it; the rest is lost to an underrun, and the delay grows by that.
    func testAStallGrowsTheDelayByWhatWasLost() {
        let stall = 5000..<7000
        var l = Listener(originMs: -2000) { k in
            let onTime = -2000 + (k + 1) * 100
            return stall.contains(onTime) ? stall.upperBound : max(1000, onTime)
        }
        l.run(untilMs: 15_000)
        assertTracksTheTruth(l)
        XCTAssertGreaterThan(l.lostMs, 1000)
        XCTAssertEqual(l.samples.last!.estimate - l.samples.first!.estimate, l.lostMs)
    }

    /// A server clock 100 ppm slower than ours: every page is a little later than the last
    /// minimum would say. Creeping 200 ppm, the origin follows; pinned, it would be 360 ms off
    /// after an hour.
    func testCreepFollowsASlowerServerClock() {
        func originLag(creep: Double) -> Double {
            var e = Playout.Delay(creep: creep)
            var bound = 0.0
            for k in 0..<36_000 {
                let arrival = Int((Double(1000 + (k + 1) * 100) * 1.0001).rounded())
                e.decoded(samples: 100, rate: 1000, arrival: Instant(ms: arrival))
                bound = Double(arrival) - e.position.ms
            }
            return bound - e.originMs!
        }
        XCTAssertLessThan(originLag(creep: StreamTuning.originCreep), 1.5)
        XCTAssertEqual(originLag(creep: 0), 360, accuracy: 1)
    }

    /// On our own clock's pace the creep never moves the origin past a punctual page.
    func testCreepStaysOnAPunctualClock() {
        var e = Playout.Delay()
        for k in 0..<1000 {
            e.decoded(samples: 100, rate: 1000, arrival: Instant(ms: 500 + (k + 1) * 100))
            XCTAssertEqual(e.originMs, 500)
        }
    }

    /// Falls and small rises move a fifth of the way; a rise of more than `wholeRiseMs` is taken
    /// whole.
    func testSmoothingMovesAFifthOfTheWayButForALargeRise() {
        var e = Playout.Delay()
        XCTAssertNil(e.delayMs(now: Instant(ms: 0), soundServerMs: 500, heldMs: 0), "no frame yet")
        e.decoded(samples: 100, rate: 1000, arrival: Instant(ms: 1100))
        XCTAssertEqual(e.delayMs(now: Instant(ms: 1100), soundServerMs: 500, heldMs: 0), 500)
        XCTAssertEqual(e.delayMs(now: Instant(ms: 1100), soundServerMs: 550, heldMs: 0), 510)
        XCTAssertEqual(e.delayMs(now: Instant(ms: 1100), soundServerMs: 400, heldMs: 0), 488)
        XCTAssertEqual(e.delayMs(now: Instant(ms: 1100), soundServerMs: 500, heldMs: 100 + 300), 900)
        XCTAssertEqual(e.delayMs(now: Instant(ms: 1100), soundServerMs: 500, heldMs: 0), 820)
    }

    /// Issue #27: after a stall that ran the sink dry the delay is larger by what was lost, and
    /// the estimate, smoothed as the bridge smooths it, says so at the first sample after it:
    /// never below the truth, so no title is shown before its music.
    func testAStallIsCountedAtOnceWhenSmoothed() {
        let stall = 5000..<7000
        var l = Listener(smoothing: StreamTuning.delaySmoothing, originMs: -2000) { k in
            let onTime = -2000 + (k + 1) * 100
            return stall.contains(onTime) ? stall.upperBound : max(1000, onTime)
        }
        l.run(untilMs: 15_000)
        XCTAssertGreaterThan(l.lostMs, 1000)
        assertTracksTheTruth(l)
    }

    /// Audio ahead of its on-time arrival (the estimate's rounding) is not a negative delay.
    func testLateIsNeverNegative() {
        var e = Playout.Delay()
        e.decoded(samples: 100, rate: 1000, arrival: Instant(ms: 1100))
        XCTAssertEqual(e.delayMs(now: Instant(ms: 900), soundServerMs: 300, heldMs: 0), 300)
    }

    /// Between measures the published delay stands, until the sound server's buffer at the last
    /// one would have run dry: from then on nothing is heard and the delay grows with the clock.
    func testTheFiguresDelayGrowsOnceTheOutputStarves() {
        var f = StreamFigures()
        XCTAssertEqual(f.localDelayMs(atMs: 5000), 0, "not playing")
        f.localDelayMs = 900
        f.bufferedMs = 300
        f.delayMeasuredAtMs = 1000
        XCTAssertEqual(f.starvedMs(atMs: 1300), 0)
        XCTAssertEqual(f.localDelayMs(atMs: 1300), 900)
        XCTAssertEqual(f.starvedMs(atMs: 1800), 0, "500 ms without a write beyond the buffer: the next page may be on its way")
        XCTAssertEqual(f.starvedMs(atMs: 1801), 501)
        XCTAssertEqual(f.starvedMs(atMs: 2300), 1000)
        XCTAssertEqual(f.localDelayMs(atMs: 2300), 1900)
        XCTAssertEqual(f.localDelayMs(atMs: 900), 900, "a clock before the measure")
        f.delayMeasuredAtMs = 1
        XCTAssertEqual(f.localDelayMs(atMs: Int.max), Int.max, "saturates, never traps")
    }
}
