@testable import Audio
import Synchronization
import XCTest

/// The way back towards live at a track change (#24 item 2): which frames `ChangeCut` drops
/// before a change the server announced, given each frame's on-time moment and the backlog.
final class CushionChangeCutTests: XCTestCase {
    /// Frames of `frameMs` whose audio lies from `fromMs` on, in order, with the backlog
    /// `excess(onTime)` above the target as each is decoded: the on-time moments of those dropped.
    func run(_ c: inout ChangeCut, fromMs: Int, toMs: Int, frameMs: Int = 100, excess: (Int) -> Int?) -> [Int] {
        var dropped: [Int] = []
        for t in stride(from: fromMs, to: toMs, by: frameMs) where c.drop(onTimeMs: t, frameMs: frameMs, excessMs: excess(t)) {
            dropped.append(t)
        }
        return dropped
    }

    func testTheOldTracksLastExcessIsDroppedInWholeFramesAndTheNewTrackPlays() {
        var c = ChangeCut(marginMs: 300, pastMs: 0)
        c.announced([10_000])
        // 1450 ms behind: the frames within [8550, 10000) are dropped, whole.
        let dropped = run(&c, fromMs: 5_000, toMs: 15_000) { _ in 1450 }
        XCTAssertEqual(dropped, Array(stride(from: 8_600, to: 10_000, by: 100)))
        XCTAssertEqual(c.takeDropped().ms, 1400, "at most the excess, in whole frames")
        XCTAssertEqual(c.takeDropped().ms, 0, "told once")
        XCTAssertTrue(c.changes.isEmpty)
    }

    /// The change's on-time moment is an estimate: the cut reaches past it, so that the old track
    /// is cut to its true end, which may come a little after (the new track's first moments go).
    func testTheCutReachesPastTheChange() {
        var c = ChangeCut(marginMs: 300, pastMs: 150)
        c.announced([10_000])
        XCTAssertEqual(c.changes, [10_150])
        let dropped = run(&c, fromMs: 5_000, toMs: 15_000) { _ in 1450 }
        XCTAssertEqual(dropped, Array(stride(from: 8_700, to: 10_100, by: 100)), "[8 700, 10 150) in whole frames")
        XCTAssertEqual(c.takeDropped().ms, 1400)
    }

    func testFramesAcrossTheCutsEdgesPlay() {
        var c = ChangeCut(marginMs: 300, pastMs: 0)
        c.announced([10_020])
        // Frames at …, 8550 (across X − E = 8570, 80 of its 100 ms within: cut), 8650, …, 9950
        // (across X = 10020: the change's frame plays).
        let dropped = run(&c, fromMs: 50, toMs: 12_050) { _ in 1450 }
        XCTAssertEqual(dropped.first, 8_550)
        XCTAssertEqual(dropped.last, 9_850)
        XCTAssertEqual(c.takeDropped().ms, 1400, "nearest to the excess, in whole frames")
        // Half of the frame across X − E within, or less: it plays.
        var d = ChangeCut(marginMs: 300, pastMs: 0)
        d.announced([10_050])
        XCTAssertEqual(run(&d, fromMs: 50, toMs: 12_050) { _ in 1450 }.first, 8_650)
        XCTAssertEqual(d.takeDropped().ms, 1400)
    }

    func testNoCutWithinTheMarginOrWithoutAKnownExcess() {
        var c = ChangeCut(marginMs: 300, pastMs: 0)
        c.announced([10_000])
        XCTAssertEqual(run(&c, fromMs: 5_000, toMs: 12_000) { _ in 300 }, [], "a backlog at the margin is jitter")
        var d = ChangeCut(marginMs: 300, pastMs: 0)
        d.announced([10_000])
        XCTAssertEqual(run(&d, fromMs: 5_000, toMs: 12_000) { _ in nil }, [], "the excess not known yet")
        XCTAssertTrue(d.changes.isEmpty, "a change the decoder passed is let go")
        XCTAssertEqual(d.takeDropped().ended, false)
    }

    func testAChangeAlreadyBehindTheDecoderIsSkipped() {
        var c = ChangeCut(marginMs: 300, pastMs: 0)
        XCTAssertFalse(c.drop(onTimeMs: 20_000, frameMs: 100, excessMs: 1500))
        c.announced([19_000, 20_050])
        // 19 000 is behind; 20 050 lies within this frame's audio: the frame holding the change plays.
        XCTAssertFalse(c.drop(onTimeMs: 20_000, frameMs: 100, excessMs: 1500))
        XCTAssertTrue(c.changes.isEmpty)
        XCTAssertEqual(run(&c, fromMs: 20_100, toMs: 30_000) { _ in 1500 }, [])
    }

    func testACutThatComesLateDropsOnlyWhatIsLeftBeforeTheChange() {
        var c = ChangeCut(marginMs: 300, pastMs: 0)
        c.announced([10_000])
        // The backlog is known only from 9500 on (the window filled late): 500 ms are dropped, not 1500.
        let dropped = run(&c, fromMs: 5_000, toMs: 12_000) { t in t >= 9_500 ? 1500 : nil }
        XCTAssertEqual(dropped, Array(stride(from: 9_500, to: 10_000, by: 100)))
    }

    func testOneCutPerChangeAndEachChangeHasItsOwn() {
        var c = ChangeCut(marginMs: 300, pastMs: 0)
        c.announced([10_000, 10_000, 20_000])
        XCTAssertEqual(c.changes, [10_000, 20_000], "a repeat is kept once")
        // The excess as it would be after each cut: what the first cut took is no longer there.
        var backlog = 1000
        var dropped: [Int] = []
        for t in stride(from: 5_000, to: 25_000, by: 100) {
            if c.drop(onTimeMs: t, frameMs: 100, excessMs: backlog) {
                dropped.append(t)
                backlog -= 100
            }
        }
        XCTAssertEqual(dropped, Array(stride(from: 9_000, to: 10_000, by: 100)), "the second change finds no excess")
        XCTAssertEqual(c.takeDropped().ms, 1000)
    }

    func testNonsenseCannotTrap() {
        var c = ChangeCut(marginMs: 300, pastMs: 0)
        c.announced([Int.max, Int.min])
        _ = c.drop(onTimeMs: Int.max - 10, frameMs: 100, excessMs: Int.max)
        _ = c.drop(onTimeMs: Int.max, frameMs: Int.max, excessMs: Int.min)
        XCTAssertFalse(c.drop(onTimeMs: 0, frameMs: 0, excessMs: 1000))
        XCTAssertFalse(c.drop(onTimeMs: nil, frameMs: 100, excessMs: 1000))
        var d = ChangeCut(marginMs: 300, pastMs: 0)
        d.announced([1_000])
        XCTAssertFalse(d.drop(onTimeMs: Int.min, frameMs: 100, excessMs: Int.max), "not before the change's own audio")
        XCTAssertLessThanOrEqual(d.changes.count, ChangeCut.limit)
        d.announced(Array(0..<40).map { 100_000 + $0 * 1000 })
        XCTAssertEqual(d.changes.count, ChangeCut.limit, "bounded")
    }

    /// The cut in the output's own terms: it restarts the window of waits, and is told once it
    /// ended, with how much later than the change its new track is heard.
    func testTheOutputsCushionCutsAtAChangeAndTellsIt() {
        var o = OutputCushion(learned: CushionTarget())
        let stats = StreamStats()
        let later = Mutex<[[Int]]>([])
        stats.onChangeHeardLater { onTime, ms in later.withLock { $0.append([onTime, ms]) } }
        let format = AudioFormat(sampleRate: 1000, channels: 1, bitsPerSample: 16)
        // Tones (not silence): 100 ms frames whose bytes waited 1500 ms, decoded every 100 ms.
        let plane = [Int32](repeating: 4000, count: 100)
        var dropped: [Int] = []
        var now = 100_000
        plane.withUnsafeBufferPointer { l in
            let planes: [UnsafePointer<Int32>?] = [l.baseAddress]
            planes.withUnsafeBufferPointer { p in
                let f = DecodedFrame(format: format, samples: 100, planes: p.baseAddress!)
                // Up to 500 ms of audio after the change: less than the window of waits.
                for t in stride(from: 0, to: 5_500, by: 100) {
                    if o.drop(f, arrivalMs: now - 1500, onTimeMs: 50_000 + t, changes: t == 0 ? [55_000] : [], nowMs: now, stats: stats) {
                        dropped.append(t)
                    } else {
                        now += 100
                    }
                }
            }
        }
        // The cut reaches `StreamTuning.cushionCutPastMs` (150) past the change: [53 650, 55 150).
        XCTAssertEqual(dropped, Array(stride(from: 3_700, to: 5_100, by: 100)))
        XCTAssertEqual(later.withLock { $0 }, [[55_000, 100]], "the new track is heard from 55 100, where the cut ended")
        XCTAssertNil(o.policy.excessMs(nowMs: now), "the waits before the cut are forgotten")
        let m = o.measured(since: StreamFigures(), nowMs: 110_000)
        XCTAssertEqual(m.cutMs, 1400)
        XCTAssertEqual(m.droppedMs, 0, "no silence dropped")
    }
}
