@testable import Audio
import XCTest

/// The cushion kept on purpose, learned from the link (#24 item 2): grows at the first sign of
/// need, up to the cap, and goes after a clean while. The clock is an input.
final class CushionTargetTests: XCTestCase {
    /// Reads every `everyMs` from `fromMs` to `toMs` (exclusive): the arrivals of a clean link.
    func clean(_ t: inout CushionTarget, fromMs: Int, toMs: Int, everyMs: Int = 90) {
        for at in stride(from: fromMs, to: toMs, by: everyMs) { t.arrived(atMs: at) }
    }

    func testACleanLinkKeepsNoCushion() {
        var t = CushionTarget(capMs: 2000, cleanMs: 30_000, bufferMs: 600)
        // Ogg pages of a quiet tone come up to 0.4 s apart: within what the buffer rides out.
        clean(&t, fromMs: 0, toMs: 60_000, everyMs: 400)
        XCTAssertEqual(t.currentMs(nowMs: 60_000), 0)
        XCTAssertNil(t.neededAtMs)
    }

    /// A quiet stream whose pages hold a second of audio comes a second at a time on a clean
    /// link: that rhythm is no stall (but for the first such gap); a stall of 1.5 s on top of it is.
    func testALinkThatComesASecondAtATimeIsNoStall() {
        var t = CushionTarget(capMs: 2000, cleanMs: 30_000, bufferMs: 600)
        clean(&t, fromMs: 0, toMs: 5000, everyMs: 200)
        clean(&t, fromMs: 5000, toMs: 60_000, everyMs: 1000)
        XCTAssertEqual(t.currentMs(nowMs: 60_000), 0, "its first long gap was taken for a stall, 55 s ago")
        XCTAssertEqual(t.usualGapMs, 1000)
        t.arrived(atMs: 59_000 + 2500)
        XCTAssertEqual(t.currentMs(nowMs: 61_500), 2000, "2.5 s with nothing, capped")
    }

    /// Stalls of 1.5 s every 7.5 s: the first grows the cushion to the stall, before the next;
    /// it stays while they go on, and goes 30 s after the last.
    func testStallsGrowItAtTheFirstAndACleanLinkLetsItGo() {
        var t = CushionTarget(capMs: 2000, cleanMs: 30_000, bufferMs: 600)
        var now = 0
        for stall in 0..<6 {
            clean(&t, fromMs: now, toMs: now + 6000)
            let lastRead = now + 5940
            now += 6000 + 1500  // the stall: nothing arrives, then the burst
            if stall > 0 { XCTAssertEqual(t.currentMs(nowMs: now - 1), 1560, "grown before the next stall") }
            t.arrived(atMs: now)
            XCTAssertEqual(t.currentMs(nowMs: now), now - lastRead, "the gap between the last read and the burst")
        }
        let healed = now
        clean(&t, fromMs: now, toMs: healed + 29_999)
        XCTAssertGreaterThan(t.currentMs(nowMs: healed + 29_999), 0, "kept through 30 s less 1 ms of a clean link")
        t.arrived(atMs: healed + 30_000)
        XCTAssertEqual(t.currentMs(nowMs: healed + 30_000), 0, "let go after 30 s clean")
    }

    /// The rig's quiet tones come a page every 836 ms: each stall of 1.5 s every 7.5 s is seen,
    /// not only the first (a stall's gap is forgotten with time, not with reads, of which there
    /// are only nine between two stalls), and the cushion is kept for as long as they go on.
    func testStallsOnALinkOfFewReadsAreEachSeen() {
        var t = CushionTarget(capMs: 2000, cleanMs: 30_000, bufferMs: 600)
        var now = 0
        var seen: [Int] = []
        for _ in 0..<8 {
            clean(&t, fromMs: now, toMs: now + 6000, everyMs: 836)
            let lastRead = now + 5852
            now += 7500
            let before = t.neededAtMs
            t.arrived(atMs: now)
            if t.neededAtMs != before { seen.append(now - lastRead) }
        }
        XCTAssertEqual(seen, Array(repeating: 1648, count: 8))
        XCTAssertEqual(t.currentMs(nowMs: now + 29_999), 1648)
    }

    /// Pages every 420 ms (the rig's): a page held 200 ms by a stall (bytes 620 ms after the last)
    /// is seen, though the sound server rides it out, so that the cushion is made up before a
    /// stall that holds one longer; a page late by the slack or less is the link's jitter.
    func testAStallTheBufferRidesOutIsSeen() {
        var t = CushionTarget(capMs: 2000, cleanMs: 30_000, bufferMs: 600, slackMs: 150)
        clean(&t, fromMs: 0, toMs: 10_080, everyMs: 420)
        t.arrived(atMs: 9_660 + 560)  // 140 ms late
        XCTAssertEqual(t.currentMs(nowMs: 10_220), 0, "jitter")
        clean(&t, fromMs: 10_220 + 420, toMs: 30_000, everyMs: 420)
        t.arrived(atMs: 29_960 + 620)
        XCTAssertEqual(t.currentMs(nowMs: 30_580), 620)
    }

    func testItNeverGrowsBeyondTheCapAndOnlyEverGrowsWhileNeeded() {
        var t = CushionTarget(capMs: 2000, cleanMs: 30_000, bufferMs: 600)
        clean(&t, fromMs: 0, toMs: 10_000, everyMs: 100)  // the link's rhythm: reads 100 ms apart
        t.arrived(atMs: 9900 + 1200)
        XCTAssertEqual(t.currentMs(nowMs: 11_100), 1200)
        t.arrived(atMs: 11_100 + 1000)  // a smaller need, just after the stall: the larger stays
        XCTAssertEqual(t.currentMs(nowMs: 12_100), 1200)
        t.arrived(atMs: 12_100 + 7100)  // 7.1 s with nothing
        XCTAssertEqual(t.currentMs(nowMs: 19_200), 2000)
    }

    /// The first reads of a connection set no rhythm yet: a page that comes a second after the
    /// connect burst is no stall.
    func testTheFirstGapOfAConnectionIsNoStall() {
        var t = CushionTarget(capMs: 2000, cleanMs: 30_000, bufferMs: 600)
        t.arrived(atMs: 0)
        t.arrived(atMs: 990)
        XCTAssertEqual(t.currentMs(nowMs: 990), 0)
        t.arrived(atMs: 990 + 1600)
        XCTAssertEqual(t.currentMs(nowMs: 2590), 1600, "a stall of more than 1.5 s is one, even this early")
    }

    /// An underrun asks for what the output lacked on top of the backlog it had.
    func testAnUnderrunGrowsItByWhatWasMissing() {
        var t = CushionTarget(capMs: 2000, cleanMs: 30_000, bufferMs: 600)
        t.underran(starvedMs: 85, backlogMs: 120, nowMs: 5000)
        XCTAssertEqual(t.currentMs(nowMs: 5000), 205)
        t.underran(starvedMs: 0, backlogMs: 1900, nowMs: 6000)
        XCTAssertEqual(t.currentMs(nowMs: 6000), 205, "no underrun, no need")
        XCTAssertEqual(t.currentMs(nowMs: 35_000), 0)
    }

    /// A new connection's first bytes come after its connect: no stall of the link.
    func testAReconnectIsNoGap() {
        var t = CushionTarget(capMs: 2000, cleanMs: 30_000, bufferMs: 600)
        t.arrived(atMs: 1000)
        t.reconnected()
        t.arrived(atMs: 5000)
        XCTAssertEqual(t.currentMs(nowMs: 5000), 0)
    }

    func testOutOfRangeInputsCannotTrap() {
        var t = CushionTarget(capMs: -5, cleanMs: Int.min, bufferMs: Int.max)
        t.arrived(atMs: Int.min)
        t.arrived(atMs: Int.max)
        t.underran(starvedMs: Int.max, backlogMs: Int.max, nowMs: Int.min)
        XCTAssertEqual(t.currentMs(nowMs: Int.max), 0)
        var u = CushionTarget(capMs: 2000, cleanMs: 30_000, bufferMs: 600)
        u.arrived(atMs: Int.min)
        u.arrived(atMs: Int.max)
        u.underran(starvedMs: Int.max, backlogMs: Int.max, nowMs: Int.max)
        XCTAssertEqual(u.currentMs(nowMs: Int.max), 2000)
    }
}
