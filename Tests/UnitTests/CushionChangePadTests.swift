@testable import Audio
import XCTest

/// The cushion grown at a track change (#24 item 2): the silence `ChangePad` puts before a change
/// the server announced, and the audio it mutes around it, given each frame's on-time moment and
/// the cushion wanted.
final class CushionChangePadTests: XCTestCase {
    /// Frames of `frameMs` from `fromMs` to `toMs`, with `want(onTime)` wanted as each is played:
    /// (on-time moment, treatment) of each frame given silence or muted.
    func run(_ p: inout ChangePad, fromMs: Int, toMs: Int, frameMs: Int = 100, leastMs: Int = 150,
             want: (Int) -> Int?) -> [(Int, ChangePad.Treatment)] {
        var out: [(Int, ChangePad.Treatment)] = []
        for t in stride(from: fromMs, to: toMs, by: frameMs) {
            let r = p.treat(onTimeMs: t, frameMs: frameMs, wantMs: want(t), leastMs: leastMs)
            if r != ChangePad.Treatment() { out.append((t, r)) }
        }
        return out
    }

    func testTheWantGoesBeforeTheWindowAroundTheChangeWhichIsMuted() {
        var p = ChangePad(aroundMs: 150)
        p.announced([10_020])
        // The window [9 870, 10 170): the frame at 9 800 reaches into it and is muted whole (the
        // old track ends up to a frame earlier), with the want before it; 9 900 and 10 000 whole;
        // 10 100 up to 10 170.
        let r = run(&p, fromMs: 5_000, toMs: 15_000) { _ in 700 }
        XCTAssertEqual(r.map(\.0), [9_800, 9_900, 10_000, 10_100])
        XCTAssertEqual(r.map(\.1.silenceMs), [700, 0, 0, 0], "the want once, before the window")
        XCTAssertEqual(r.map(\.1.mutedMs), [100, 100, 100, 70], "muted to the window's end, no further")
        XCTAssertNil(p.window)
        XCTAssertTrue(p.changes.isEmpty)
    }

    /// A frame held while paused in the window is muted as the window says, without moving on:
    /// the frames played after the pause close it.
    func testAFrameHeldInTheWindowIsMutedWithoutMovingOn() {
        var p = ChangePad(aroundMs: 150)
        p.announced([10_020])
        XCTAssertEqual(p.mutedMs(onTimeMs: 9_800, frameMs: 100), 0, "no window yet")
        XCTAssertEqual(p.treat(onTimeMs: 9_800, frameMs: 100, wantMs: 700, leastMs: 150), ChangePad.Treatment(silenceMs: 700, mutedMs: 100, paddedChangeMs: 10_020))
        XCTAssertEqual(p.mutedMs(onTimeMs: 9_900, frameMs: 100), 100)
        XCTAssertEqual(p.mutedMs(onTimeMs: 10_100, frameMs: 100), 70)
        XCTAssertEqual(p.mutedMs(onTimeMs: 10_200, frameMs: 100), 0)
        XCTAssertEqual(p.mutedMs(onTimeMs: nil, frameMs: 100), 0)
        XCTAssertNotNil(p.window, "a look does not move on")
        XCTAssertEqual(p.treat(onTimeMs: 10_200, frameMs: 100, wantMs: 700, leastMs: 150), ChangePad.Treatment())
        XCTAssertNil(p.window)
    }

    func testAFrameThatEndsWithTheWindowClosesIt() {
        var p = ChangePad(aroundMs: 100)
        p.announced([10_000])
        let r = run(&p, fromMs: 9_000, toMs: 11_000) { _ in 400 }
        XCTAssertEqual(r.map(\.0), [9_900, 10_000])
        XCTAssertEqual(r.map(\.1.mutedMs), [100, 100])
        XCTAssertNil(p.window)
    }

    func testNothingWhenTheWantIsSmallOrUnknown() {
        for want in [nil, -500, 0, 150] as [Int?] {
            var p = ChangePad(aroundMs: 150)
            p.announced([10_000])
            XCTAssertEqual(run(&p, fromMs: 5_000, toMs: 15_000) { _ in want }.map(\.0), [], "want \(String(describing: want))")
            XCTAssertTrue(p.changes.isEmpty, "the change is let go with its window")
        }
        // Unknown on-time moments: nothing, and the change waits.
        var q = ChangePad(aroundMs: 150)
        q.announced([10_000])
        XCTAssertEqual(q.treat(onTimeMs: nil, frameMs: 100, wantMs: 700, leastMs: 150), ChangePad.Treatment())
        XCTAssertEqual(q.changes, [10_000])
    }

    /// A change announced after the decoder passed its window's start: the boundary may have been
    /// played already, and silence after it would be a gap in the new track.
    func testAChangeWhoseWindowWasPassedIsLetGo() {
        var p = ChangePad(aroundMs: 150)
        p.announced([10_000])
        XCTAssertEqual(run(&p, fromMs: 9_900, toMs: 12_000) { _ in 700 }.map(\.0), [])
        XCTAssertTrue(p.changes.isEmpty)
        // One later still waits for its own window.
        var q = ChangePad(aroundMs: 150)
        q.announced([10_000, 20_000])
        let r = run(&q, fromMs: 9_900, toMs: 25_000) { _ in 700 }
        XCTAssertEqual(r.first?.0, 19_800)
        XCTAssertEqual(r.first?.1.silenceMs, 700)
    }

    func testEachChangeOnceInOrderAndBounded() {
        var p = ChangePad(aroundMs: 150)
        p.announced([30_000, 10_000, 10_000, 20_000])
        XCTAssertEqual(p.changes, [10_000, 20_000, 30_000], "in order, a repeat once")
        let r = run(&p, fromMs: 5_000, toMs: 35_000) { _ in 500 }
        XCTAssertEqual(r.filter { $0.1.silenceMs > 0 }.map(\.0), [9_800, 19_800, 29_800])
        var q = ChangePad(aroundMs: 150)
        q.announced(Array(stride(from: 0, to: 100_000, by: 1_000)))
        XCTAssertEqual(q.changes.count, ChangePad.limit, "the newest, bounded")
        XCTAssertEqual(q.changes.last, 99_000)
    }

    /// Moments near the ends of `Int` do not trap.
    func testExtremeMomentsDoNotTrap() {
        var p = ChangePad(aroundMs: 150)
        p.announced([Int.max, Int.min])
        _ = p.treat(onTimeMs: Int.max - 10, frameMs: 100, wantMs: 700, leastMs: 150)
        _ = p.treat(onTimeMs: Int.min, frameMs: 100, wantMs: Int.max, leastMs: 150)
        _ = p.treat(onTimeMs: 0, frameMs: Int.max, wantMs: 700, leastMs: 150)
    }
}
