@testable import Audio
import XCTest

/// The way back towards live at a track change: which frames `Playout.Cut` drops
/// before a change the server announced, given each frame's on-time moment and the backlog.
final class PlayoutCutTests: XCTestCase {
    /// Frames of `frameMs` whose audio lies from `fromMs` on, in order, with the backlog
    /// `excess(onTime)` above the target as each is decoded: the on-time moments of those dropped.
    func run(_ c: inout Playout.Cut, fromMs: Int, toMs: Int, frameMs: Int = 100, excess: (Int) -> Int?) -> [Int] {
        var dropped: [Int] = []
        for t in stride(from: fromMs, to: toMs, by: frameMs) where c.drop(onTime: Instant(ms: t), frameMs: frameMs, excessMs: excess(t)) {
            dropped.append(t)
        }
        return dropped
    }

    func testTheOldTracksLastExcessIsDroppedInWholeFramesAndTheNewTrackPlays() {
        var c = Playout.Cut(marginMs: 300, pastMs: 0)
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
        var c = Playout.Cut(marginMs: 300, pastMs: 150)
        c.announced([10_000])
        XCTAssertEqual(c.changes, [10_150])
        let dropped = run(&c, fromMs: 5_000, toMs: 15_000) { _ in 1450 }
        XCTAssertEqual(dropped, Array(stride(from: 8_700, to: 10_100, by: 100)), "[8 700, 10 150) in whole frames")
        XCTAssertEqual(c.takeDropped().ms, 1400)
    }

    func testFramesAcrossTheCutsEdgesPlay() {
        var c = Playout.Cut(marginMs: 300, pastMs: 0)
        c.announced([10_020])
        // Frames at …, 8550 (across X − E = 8570, 80 of its 100 ms within: cut), 8650, …, 9950
        // (across X = 10020: the change's frame plays).
        let dropped = run(&c, fromMs: 50, toMs: 12_050) { _ in 1450 }
        XCTAssertEqual(dropped.first, 8_550)
        XCTAssertEqual(dropped.last, 9_850)
        XCTAssertEqual(c.takeDropped().ms, 1400, "nearest to the excess, in whole frames")
        // Half of the frame across X − E within, or less: it plays.
        var d = Playout.Cut(marginMs: 300, pastMs: 0)
        d.announced([10_050])
        XCTAssertEqual(run(&d, fromMs: 50, toMs: 12_050) { _ in 1450 }.first, 8_650)
        XCTAssertEqual(d.takeDropped().ms, 1400)
    }

    func testNoCutWithinTheMarginOrWithoutAKnownExcess() {
        var c = Playout.Cut(marginMs: 300, pastMs: 0)
        c.announced([10_000])
        XCTAssertEqual(run(&c, fromMs: 5_000, toMs: 12_000) { _ in 300 }, [], "a backlog at the margin is jitter")
        var d = Playout.Cut(marginMs: 300, pastMs: 0)
        d.announced([10_000])
        XCTAssertEqual(run(&d, fromMs: 5_000, toMs: 12_000) { _ in nil }, [], "the excess not known yet")
        XCTAssertTrue(d.changes.isEmpty, "a change the decoder passed is let go")
        XCTAssertEqual(d.takeDropped().ended, false)
    }

    func testAChangeAlreadyBehindTheDecoderIsSkipped() {
        var c = Playout.Cut(marginMs: 300, pastMs: 0)
        XCTAssertFalse(c.drop(onTime: 20_000, frameMs: 100, excessMs: 1500))
        c.announced([19_000, 20_050])
        // 19 000 is behind; 20 050 lies within this frame's audio: the frame holding the change plays.
        XCTAssertFalse(c.drop(onTime: 20_000, frameMs: 100, excessMs: 1500))
        XCTAssertTrue(c.changes.isEmpty)
        XCTAssertEqual(run(&c, fromMs: 20_100, toMs: 30_000) { _ in 1500 }, [])
    }

    func testACutThatComesLateDropsOnlyWhatIsLeftBeforeTheChange() {
        var c = Playout.Cut(marginMs: 300, pastMs: 0)
        c.announced([10_000])
        // The backlog is known only from 9500 on (the window filled late): 500 ms are dropped, not 1500.
        let dropped = run(&c, fromMs: 5_000, toMs: 12_000) { t in t >= 9_500 ? 1500 : nil }
        XCTAssertEqual(dropped, Array(stride(from: 9_500, to: 10_000, by: 100)))
    }

    func testOneCutPerChangeAndEachChangeHasItsOwn() {
        var c = Playout.Cut(marginMs: 300, pastMs: 0)
        c.announced([10_000, 10_000, 20_000])
        XCTAssertEqual(c.changes, [10_000, 20_000], "a repeat is kept once")
        // The excess as it would be after each cut: what the first cut took is no longer there.
        var backlog = 1000
        var dropped: [Int] = []
        for t in stride(from: 5_000, to: 25_000, by: 100) {
            if c.drop(onTime: Instant(ms: t), frameMs: 100, excessMs: backlog) {
                dropped.append(t)
                backlog -= 100
            }
        }
        XCTAssertEqual(dropped, Array(stride(from: 9_000, to: 10_000, by: 100)), "the second change finds no excess")
        XCTAssertEqual(c.takeDropped().ms, 1000)
    }

    func testNonsenseCannotTrap() {
        var c = Playout.Cut(marginMs: 300, pastMs: 0)
        c.announced([Instant(ms: .max), Instant(ms: .min)])
        _ = c.drop(onTime: Instant(ms: Int.max - 10), frameMs: 100, excessMs: Int.max)
        _ = c.drop(onTime: Instant(ms: Int.max), frameMs: Int.max, excessMs: Int.min)
        XCTAssertFalse(c.drop(onTime: 0, frameMs: 0, excessMs: 1000))
        XCTAssertFalse(c.drop(onTime: nil, frameMs: 100, excessMs: 1000))
        var d = Playout.Cut(marginMs: 300, pastMs: 0)
        d.announced([1_000])
        XCTAssertFalse(d.drop(onTime: Instant(ms: Int.min), frameMs: 100, excessMs: Int.max), "not before the change's own audio")
        XCTAssertLessThanOrEqual(d.changes.count, Playout.Cut.limit)
        d.announced(Array(0..<40).map { Instant(ms: 100_000 + $0 * 1000) })
        XCTAssertEqual(d.changes.count, Playout.Cut.limit, "bounded")
    }

    /// The cut in the playout's own terms: it restarts the window of waits, and is told once it
    /// ended, with how much later than the change its new track is heard. Tones (not silence):
    /// 100 ms frames whose bytes waited 1500 ms, decoded every 100 ms, on time from 98 400.
    func testThePlayoutCutsAtAChangeAndTellsIt() {
        var o = Playout(keepMs: 0, learned: Playout.Target(), joining: 0)
        XCTAssertTrue(o.joinEnds(heldMs: 0, droppedMs: 0, idle: true, ended: false, at: 0))
        var dropped: [Int] = []
        var later: [Playout.Note] = []
        // Up to 500 ms of audio after the change: less than the window of waits.
        for t in stride(from: 0, to: 5_500, by: 100) {
            if t == 0 { o.announced([103_400]) }
            let now = Instant(ms: 100_000 + t)
            if o.decide(samples: 100, format: toneFormat, arrival: now - 1500, at: now, silent: { false }).fate == .drop { dropped.append(t) }
            later += o.takeNotes().filter { if case .changeHeardLater = $0 { return true } else { return false } }
        }
        // The cut reaches `StreamTuning.cushionCutPastMs` (150) past the change: [102 050, 103 550).
        XCTAssertEqual(dropped, Array(stride(from: 3_700, to: 5_100, by: 100)))
        XCTAssertEqual(later, [.changeHeardLater(onTime: 103_400, laterMs: 100)], "the new track is heard from 103 500, where the cut ended")
        XCTAssertNil(o.drops.excessMs(at: Instant(ms: 105_500)), "the waits before the cut are forgotten")
        let told = o.measured(delayMs: 2000, soundServerMs: 500, at: 110_000).told
        XCTAssertEqual(told.cutMs, 1400)
        XCTAssertEqual(told.droppedMs, 0, "no silence dropped")
    }
}

/// The cushion grown at a track change: the silence `Playout.Pad` puts before a change
/// the server announced, and the audio it mutes around it, given each frame's on-time moment and
/// the cushion wanted.
final class PlayoutPadTests: XCTestCase {
    /// Frames of `frameMs` from `fromMs` to `toMs`, with `want(onTime)` wanted as each is played:
    /// (on-time moment, treatment) of each frame given silence or muted.
    func run(_ p: inout Playout.Pad, fromMs: Int, toMs: Int, frameMs: Int = 100, leastMs: Int = 150,
             want: (Int) -> Int?) -> [(Int, Playout.Pad.Treatment)] {
        var out: [(Int, Playout.Pad.Treatment)] = []
        for t in stride(from: fromMs, to: toMs, by: frameMs) {
            let r = p.treat(onTime: Instant(ms: t), frameMs: frameMs, wantMs: want(t), leastMs: leastMs)
            if r != Playout.Pad.Treatment() { out.append((t, r)) }
        }
        return out
    }

    func testTheWantGoesBeforeTheWindowAroundTheChangeWhichIsMuted() {
        var p = Playout.Pad(aroundMs: 150)
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
        var p = Playout.Pad(aroundMs: 150)
        p.announced([10_020])
        XCTAssertEqual(p.mutedMs(onTime: 9_800, frameMs: 100), 0, "no window yet")
        XCTAssertEqual(p.treat(onTime: 9_800, frameMs: 100, wantMs: 700, leastMs: 150), Playout.Pad.Treatment(silenceMs: 700, mutedMs: 100, paddedChange: 10_020))
        XCTAssertEqual(p.mutedMs(onTime: 9_900, frameMs: 100), 100)
        XCTAssertEqual(p.mutedMs(onTime: 10_100, frameMs: 100), 70)
        XCTAssertEqual(p.mutedMs(onTime: 10_200, frameMs: 100), 0)
        XCTAssertEqual(p.mutedMs(onTime: nil, frameMs: 100), 0)
        XCTAssertNotNil(p.window, "a look does not move on")
        XCTAssertEqual(p.treat(onTime: 10_200, frameMs: 100, wantMs: 700, leastMs: 150), Playout.Pad.Treatment())
        XCTAssertNil(p.window)
    }

    func testAFrameThatEndsWithTheWindowClosesIt() {
        var p = Playout.Pad(aroundMs: 100)
        p.announced([10_000])
        let r = run(&p, fromMs: 9_000, toMs: 11_000) { _ in 400 }
        XCTAssertEqual(r.map(\.0), [9_900, 10_000])
        XCTAssertEqual(r.map(\.1.mutedMs), [100, 100])
        XCTAssertNil(p.window)
    }

    func testNothingWhenTheWantIsSmallOrUnknown() {
        for want in [nil, -500, 0, 150] as [Int?] {
            var p = Playout.Pad(aroundMs: 150)
            p.announced([10_000])
            XCTAssertEqual(run(&p, fromMs: 5_000, toMs: 15_000) { _ in want }.map(\.0), [], "want \(String(describing: want))")
            XCTAssertTrue(p.changes.isEmpty, "the change is let go with its window")
        }
        // Unknown on-time moments: nothing, and the change waits.
        var q = Playout.Pad(aroundMs: 150)
        q.announced([10_000])
        XCTAssertEqual(q.treat(onTime: nil, frameMs: 100, wantMs: 700, leastMs: 150), Playout.Pad.Treatment())
        XCTAssertEqual(q.changes, [10_000])
    }

    /// A change announced after the decoder passed its window's start: the boundary may have been
    /// played already, and silence after it would be a gap in the new track.
    func testAChangeWhoseWindowWasPassedIsLetGo() {
        var p = Playout.Pad(aroundMs: 150)
        p.announced([10_000])
        XCTAssertEqual(run(&p, fromMs: 9_900, toMs: 12_000) { _ in 700 }.map(\.0), [])
        XCTAssertTrue(p.changes.isEmpty)
        // One later still waits for its own window.
        var q = Playout.Pad(aroundMs: 150)
        q.announced([10_000, 20_000])
        let r = run(&q, fromMs: 9_900, toMs: 25_000) { _ in 700 }
        XCTAssertEqual(r.first?.0, 19_800)
        XCTAssertEqual(r.first?.1.silenceMs, 700)
    }

    func testEachChangeOnceInOrderAndBounded() {
        var p = Playout.Pad(aroundMs: 150)
        p.announced([30_000, 10_000, 10_000, 20_000])
        XCTAssertEqual(p.changes, [10_000, 20_000, 30_000], "in order, a repeat once")
        let r = run(&p, fromMs: 5_000, toMs: 35_000) { _ in 500 }
        XCTAssertEqual(r.filter { $0.1.silenceMs > 0 }.map(\.0), [9_800, 19_800, 29_800])
        var q = Playout.Pad(aroundMs: 150)
        q.announced(Array(stride(from: 0, to: 100_000, by: 1_000)).map { Instant(ms: $0) })
        XCTAssertEqual(q.changes.count, Playout.Pad.limit, "the newest, bounded")
        XCTAssertEqual(q.changes.last, 99_000)
    }

    /// Moments near the ends of `Int` do not trap.
    func testExtremeMomentsDoNotTrap() {
        var p = Playout.Pad(aroundMs: 150)
        p.announced([Instant(ms: .max), Instant(ms: .min)])
        _ = p.treat(onTime: Instant(ms: Int.max - 10), frameMs: 100, wantMs: 700, leastMs: 150)
        _ = p.treat(onTime: Instant(ms: Int.min), frameMs: 100, wantMs: Int.max, leastMs: 150)
        _ = p.treat(onTime: 0, frameMs: Int.max, wantMs: 700, leastMs: 150)
    }
}
