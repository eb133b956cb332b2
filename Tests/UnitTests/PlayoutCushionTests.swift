@testable import Audio
import XCTest

/// The cushion kept on purpose, learned from the link (`Playout.Target`): grows at the first sign of
/// need, up to the cap, and goes after a clean while. The clock is an input.
final class PlayoutTargetTests: XCTestCase {
    /// Reads every `everyMs` from `fromMs` to `toMs` (exclusive): the arrivals of a clean link.
    func clean(_ t: inout Playout.Target, fromMs: Int, toMs: Int, everyMs: Int = 90) {
        for at in stride(from: fromMs, to: toMs, by: everyMs) { t.arrived(at: Instant(ms: at)) }
    }

    func testACleanLinkKeepsNoCushion() {
        var t = Playout.Target(capMs: 2000, cleanMs: 30_000, bufferMs: 600)
        // Ogg pages of a quiet tone come up to 0.4 s apart: within what the buffer rides out.
        clean(&t, fromMs: 0, toMs: 60_000, everyMs: 400)
        XCTAssertEqual(t.current(at: Instant(ms: 60_000)), 0)
        XCTAssertNil(t.neededAt)
    }

    /// A quiet stream whose pages hold a second of audio comes a second at a time on a clean
    /// link: that rhythm is no stall (but for the first such gap); a stall of 1.5 s on top of it is.
    func testALinkThatComesASecondAtATimeIsNoStall() {
        var t = Playout.Target(capMs: 2000, cleanMs: 30_000, bufferMs: 600)
        clean(&t, fromMs: 0, toMs: 5000, everyMs: 200)
        clean(&t, fromMs: 5000, toMs: 60_000, everyMs: 1000)
        XCTAssertEqual(t.current(at: Instant(ms: 60_000)), 0, "its first long gap was taken for a stall, 55 s ago")
        XCTAssertEqual(t.usualGapMs, 1000)
        t.arrived(at: Instant(ms: 59_000 + 2500))
        XCTAssertEqual(t.current(at: Instant(ms: 61_500)), 2000, "2.5 s with nothing, capped")
    }

    /// Stalls of 1.5 s every 7.5 s: the first grows the cushion to the stall, before the next;
    /// it stays while they go on, and goes 30 s after the last.
    func testStallsGrowItAtTheFirstAndACleanLinkLetsItGo() {
        var t = Playout.Target(capMs: 2000, cleanMs: 30_000, bufferMs: 600)
        var now = 0
        for stall in 0..<6 {
            clean(&t, fromMs: now, toMs: now + 6000)
            let lastRead = now + 5940
            now += 6000 + 1500  // the stall: nothing arrives, then the burst
            if stall > 0 { XCTAssertEqual(t.current(at: Instant(ms: now - 1)), 1560, "grown before the next stall") }
            t.arrived(at: Instant(ms: now))
            XCTAssertEqual(t.current(at: Instant(ms: now)), now - lastRead, "the gap between the last read and the burst")
        }
        let healed = now
        clean(&t, fromMs: now, toMs: healed + 29_999)
        XCTAssertGreaterThan(t.current(at: Instant(ms: healed + 29_999)), 0, "kept through 30 s less 1 ms of a clean link")
        t.arrived(at: Instant(ms: healed + 30_000))
        XCTAssertEqual(t.current(at: Instant(ms: healed + 30_000)), 0, "let go after 30 s clean")
    }

    /// The rig's quiet tones come a page every 836 ms: each stall of 1.5 s every 7.5 s is seen,
    /// not only the first (a stall's gap is forgotten with time, not with reads, of which there
    /// are only nine between two stalls), and the cushion is kept for as long as they go on.
    func testStallsOnALinkOfFewReadsAreEachSeen() {
        var t = Playout.Target(capMs: 2000, cleanMs: 30_000, bufferMs: 600)
        var now = 0
        var seen: [Int] = []
        for _ in 0..<8 {
            clean(&t, fromMs: now, toMs: now + 6000, everyMs: 836)
            let lastRead = now + 5852
            now += 7500
            let before = t.neededAt
            t.arrived(at: Instant(ms: now))
            if t.neededAt != before { seen.append(now - lastRead) }
        }
        XCTAssertEqual(seen, Array(repeating: 1648, count: 8))
        XCTAssertEqual(t.current(at: Instant(ms: now + 29_999)), 1648)
    }

    /// Pages every 420 ms (the rig's): a page held 200 ms by a stall (bytes 620 ms after the last)
    /// is seen, though the sound server rides it out, so that the cushion is made up before a
    /// stall that holds one longer; a page late by the slack or less is the link's jitter.
    func testAStallTheBufferRidesOutIsSeen() {
        var t = Playout.Target(capMs: 2000, cleanMs: 30_000, bufferMs: 600, slackMs: 150)
        clean(&t, fromMs: 0, toMs: 10_080, everyMs: 420)
        t.arrived(at: Instant(ms: 9_660 + 560))  // 140 ms late
        XCTAssertEqual(t.current(at: Instant(ms: 10_220)), 0, "jitter")
        clean(&t, fromMs: 10_220 + 420, toMs: 30_000, everyMs: 420)
        t.arrived(at: Instant(ms: 29_960 + 620))
        XCTAssertEqual(t.current(at: Instant(ms: 30_580)), 620)
    }

    func testItNeverGrowsBeyondTheCapAndOnlyEverGrowsWhileNeeded() {
        var t = Playout.Target(capMs: 2000, cleanMs: 30_000, bufferMs: 600)
        clean(&t, fromMs: 0, toMs: 10_000, everyMs: 100)  // the link's rhythm: reads 100 ms apart
        t.arrived(at: Instant(ms: 9900 + 1200))
        XCTAssertEqual(t.current(at: Instant(ms: 11_100)), 1200)
        t.arrived(at: Instant(ms: 11_100 + 1000))  // a smaller need, just after the stall: the larger stays
        XCTAssertEqual(t.current(at: Instant(ms: 12_100)), 1200)
        t.arrived(at: Instant(ms: 12_100 + 7100))  // 7.1 s with nothing
        XCTAssertEqual(t.current(at: Instant(ms: 19_200)), 2000)
    }

    /// The first reads of a connection set no rhythm yet: a page that comes a second after the
    /// connect burst is no stall.
    func testTheFirstGapOfAConnectionIsNoStall() {
        var t = Playout.Target(capMs: 2000, cleanMs: 30_000, bufferMs: 600)
        t.arrived(at: Instant(ms: 0))
        t.arrived(at: Instant(ms: 990))
        XCTAssertEqual(t.current(at: Instant(ms: 990)), 0)
        t.arrived(at: Instant(ms: 990 + 1600))
        XCTAssertEqual(t.current(at: Instant(ms: 2590)), 1600, "a stall of more than 1.5 s is one, even this early")
    }

    /// An underrun asks for what the output lacked on top of the backlog it had.
    func testAnUnderrunGrowsItByWhatWasMissing() {
        var t = Playout.Target(capMs: 2000, cleanMs: 30_000, bufferMs: 600)
        t.underran(starvedMs: 85, backlogMs: 120, at: Instant(ms: 5000))
        XCTAssertEqual(t.current(at: Instant(ms: 5000)), 205)
        t.underran(starvedMs: 0, backlogMs: 1900, at: Instant(ms: 6000))
        XCTAssertEqual(t.current(at: Instant(ms: 6000)), 205, "no underrun, no need")
        XCTAssertEqual(t.current(at: Instant(ms: 35_000)), 0)
    }

    /// A new connection's first bytes come after its connect: no stall of the link.
    func testAReconnectIsNoGap() {
        var t = Playout.Target(capMs: 2000, cleanMs: 30_000, bufferMs: 600)
        t.arrived(at: Instant(ms: 1000))
        t.reconnected()
        t.arrived(at: Instant(ms: 5000))
        XCTAssertEqual(t.current(at: Instant(ms: 5000)), 0)
    }

    func testOutOfRangeInputsCannotTrap() {
        var t = Playout.Target(capMs: -5, cleanMs: Int.min, bufferMs: Int.max)
        t.arrived(at: Instant(ms: Int.min))
        t.arrived(at: Instant(ms: Int.max))
        t.underran(starvedMs: Int.max, backlogMs: Int.max, at: Instant(ms: Int.min))
        XCTAssertEqual(t.current(at: Instant(ms: Int.max)), 0)
        var u = Playout.Target(capMs: 2000, cleanMs: 30_000, bufferMs: 600)
        u.arrived(at: Instant(ms: Int.min))
        u.arrived(at: Instant(ms: Int.max))
        u.underran(starvedMs: Int.max, backlogMs: Int.max, at: Instant(ms: Int.max))
        XCTAssertEqual(u.current(at: Instant(ms: Int.max)), 2000)
    }
}

/// The way back towards live (`Playout.Drops`): what it drops, and where.
final class PlayoutDropsTests: XCTestCase {
    /// Frames of `frameMs` decoded every `frameMs` from `fromMs`, each `waited` and `silent` as
    /// given in turn: which were dropped.
    func run(_ p: inout Playout.Drops, fromMs: Int = 0, frameMs: Int = 93, _ frames: [(waited: Int, silent: Bool)]) -> [Bool] {
        frames.enumerated().map { k, f in p.drop(frameMs: frameMs, waitedMs: f.waited, silent: { f.silent }, at: Instant(ms: fromMs + k * frameMs)) }
    }

    func testOnACleanLinkNothingIsDropped() {
        var p = Playout.Drops(marginMs: 300, windowMs: 1000)
        let clean = (0..<40).map { k in (waited: [5, 80, 120, 30][k % 4], silent: true) }
        XCTAssertEqual(run(&p, clean), Array(repeating: false, count: 40))
        XCTAssertEqual(p.droppedMs, 0)
        XCTAssertEqual(p.excessMs(at: Instant(ms: 39 * 93)), 5)
    }

    func testABacklogIsDroppedInSilenceOnlyOnceItHeldForTheWindowDownToHalfTheMargin() {
        var p = Playout.Drops(marginMs: 300, windowMs: 1000)
        // A burst left 1400 ms waiting; music plays on (nothing dropped however far behind).
        let music = run(&p, Array(repeating: (waited: 1400, silent: false), count: 20))
        XCTAssertEqual(music, Array(repeating: false, count: 20))
        XCTAssertEqual(p.excessMs(at: Instant(ms: 19 * 93)), 1400)
        // Then silence: each dropped frame brings the next one's bytes that much sooner.
        var waited = 1400, dropped: [Bool] = [], now = 20 * 93
        for _ in 0..<20 {
            let d = p.drop(frameMs: 93, waitedMs: waited, silent: { true }, at: Instant(ms: now))
            dropped.append(d)
            if d { waited -= 93 } else { now += 93 }
        }
        XCTAssertEqual(dropped.prefix(while: { $0 }).count, 13, "\(dropped)")
        XCTAssertEqual(p.droppedMs, 13 * 93)
        XCTAssertLessThanOrEqual(waited, 150 + 93)
        XCTAssertGreaterThanOrEqual(waited, 150)
        XCTAssertEqual(p.takeDropped(), 13 * 93)
        XCTAssertEqual(p.takeDropped(), 0, "told once")
    }

    func testAMomentsLateFramesStartNoDrop() {
        var p = Playout.Drops(marginMs: 300, windowMs: 1000)
        // A busy CPU for half a second: frames waited, but not for the whole window.
        let frames = (0..<30).map { k in (waited: (10...15).contains(k) ? 600 : 20, silent: true) }
        XCTAssertEqual(run(&p, frames), Array(repeating: false, count: 30))
        // Nor before the frames span the window.
        var q = Playout.Drops(marginMs: 300, windowMs: 1000)
        XCTAssertEqual(run(&q, Array(repeating: (waited: 2000, silent: true), count: 10)), Array(repeating: false, count: 10))
        XCTAssertNil(Playout.Drops().excessMs(at: Instant(ms: 0)))
    }

    func testAnExtraCushionIsKept() {
        var p = Playout.Drops(marginMs: 300, extraMs: 800, windowMs: 1000)
        XCTAssertEqual(run(&p, Array(repeating: (waited: 1000, silent: true), count: 20)), Array(repeating: false, count: 20))
        XCTAssertEqual(p.excessMs(at: Instant(ms: 19 * 93)), 200)
        var q = Playout.Drops(marginMs: 300, extraMs: 800, windowMs: 1000)
        let dropped = run(&q, Array(repeating: (waited: 1400, silent: true), count: 12))
        XCTAssertEqual(dropped.filter { $0 }.count, 1, "once the frames span the window (the 12th), 600 ms over the extra")
    }

    func testOutOfRangeInputsDropNothingAndCannotTrap() {
        var p = Playout.Drops(marginMs: -5, extraMs: -5, windowMs: -5)
        XCTAssertEqual(p.marginMs, 0)
        XCTAssertEqual(p.extraMs, 0)
        XCTAssertFalse(p.drop(frameMs: 0, waitedMs: Int.max, silent: { true }, at: Instant(ms: Int.min)))
        XCTAssertFalse(p.drop(frameMs: -1, waitedMs: Int.max, silent: { true }, at: Instant(ms: Int.max)))
        XCTAssertFalse(p.drop(frameMs: 93, waitedMs: Int.min, silent: { true }, at: Instant(ms: 0)))
        XCTAssertTrue(p.drop(frameMs: Int.max, waitedMs: Int.max, silent: { true }, at: Instant(ms: Int.max)))
        XCTAssertEqual(p.droppedMs, Int.max)
        XCTAssertTrue(p.drop(frameMs: 93, waitedMs: Int.max, silent: { true }, at: Instant(ms: Int.max)))
        XCTAssertEqual(p.droppedMs, Int.max, "saturates")
    }

    /// Digital silence: every sample of every channel within ±1 step of 16 bits (0 below 16).
    func testDigitalSilenceIsWithinOneStepOf16BitsAtAnyDepth() {
        func silent(_ bits: Int, _ left: [Int32], _ right: [Int32]) -> Bool {
            left.withUnsafeBufferPointer { l in
                right.withUnsafeBufferPointer { r in
                    let planes: [UnsafePointer<Int32>?] = [l.baseAddress, r.baseAddress]
                    return planes.withUnsafeBufferPointer { p in
                        DecodedFrame(format: AudioFormat(sampleRate: 44100, channels: 2, bitsPerSample: bits),
                                                 samples: left.count, planes: p.baseAddress!).isDigitalSilence
                    }
                }
            }
        }
        XCTAssertTrue(silent(16, [0, 0, 1, -1], [0, 0, 0, 0]))
        XCTAssertFalse(silent(16, [0, 0, 0, 0], [0, 2, 0, 0]), "the second channel counts")
        XCTAssertFalse(silent(16, [0, -2, 0, 0], [0, 0, 0, 0]))
        XCTAssertTrue(silent(24, [256, -256, 0, 0], [0, 0, 0, 0]))
        XCTAssertFalse(silent(24, [257, 0, 0, 0], [0, 0, 0, 0]))
        XCTAssertTrue(silent(8, [0, 0, 0, 0], [0, 0, 0, 0]))
        XCTAssertFalse(silent(8, [1, 0, 0, 0], [0, 0, 0, 0]), "a step of 8 bits is heard")
        XCTAssertFalse(silent(16, [], []), "no samples: not silence")
    }
}
