@testable import Audio
import XCTest

/// The playout's cushion as a whole: an underrun seen between two measures of the delay grows the
/// target; the first frame after a stall is held for it; a stall ridden out is made up at the next
/// change; what is told. Measures are given as the sound server reported them (`settle`: a
/// measure at the moment of the one before, as when nothing was dry in between).
final class PlayoutTests: XCTestCase {
    func playout(_ target: Playout.Target = Playout.Target(capMs: 2000, cleanMs: 30_000, bufferMs: 600)) -> Playout {
        Playout(keepMs: 500, learned: target, joining: 0)
    }

    /// The measure before the next: `bufferedMs` in the sound server, `backlogMs` in the input.
    func measure(atMs: Int, bufferedMs: Int, backlogMs: Int, delayMs: Int = 900) -> Playout.Measure {
        Playout.Measure(delayMs: delayMs, soundServerMs: bufferedMs, at: Instant(ms: atMs), backlogMs: backlogMs)
    }

    /// A measure of `delayMs` at `atMs` with `bufferedMs` in the sound server, the last one being
    /// the same (nothing ran dry before it).
    func settle(_ c: inout Playout, delayMs: Int, bufferedMs: Int, atMs: Int) {
        c.last = measure(atMs: atMs, bufferedMs: bufferedMs, backlogMs: 0, delayMs: delayMs)
        _ = c.measured(delayMs: delayMs, soundServerMs: bufferedMs, at: Instant(ms: atMs))
    }

    /// What a measure at `nowMs` tells, after `last`.
    func told(_ c: inout Playout, since last: Playout.Measure?, nowMs: Int) -> Playout.Told {
        c.last = last
        return c.measured(delayMs: 900, soundServerMs: 400, at: Instant(ms: nowMs)).told
    }

    func testAnUnderrunBetweenMeasuresGrowsTheTargetOnce() {
        var c = playout()
        // 300 ms in the sound server at 1000, the next write at 1500: it had nothing for 200 ms.
        let first = told(&c, since: measure(atMs: 1000, bufferedMs: 300, backlogMs: 100), nowMs: 1500)
        XCTAssertEqual(first.newTargetMs, 300, "what it lacked on top of the backlog it had")
        XCTAssertEqual(first.droppedMs, 0)
        let second = told(&c, since: measure(atMs: 1500, bufferedMs: 400, backlogMs: 0), nowMs: 1600)
        XCTAssertNil(second.newTargetMs, "no underrun, no change to tell")
        XCTAssertEqual(c.target.targetMs, 300)
    }

    /// The sound server's reports are rough: 20 ms short is no underrun.
    func testAReportAFewMsShortIsNoUnderrun() {
        var c = playout(Playout.Target())
        XCTAssertNil(told(&c, since: measure(atMs: 1000, bufferedMs: 300, backlogMs: 0), nowMs: 1320).newTargetMs)
        XCTAssertEqual(c.target.targetMs, 0)
    }

    /// A new connection keeps what the link taught, not the gap before its first byte.
    func testANewConnectionKeepsTheLearnedTarget() {
        var learned = Playout.Target(capMs: 2000, cleanMs: 30_000, bufferMs: 600)
        learned.underran(starvedMs: 900, backlogMs: 0, at: 1000)
        var c = playout(learned)
        c.arrived(50_000)
        XCTAssertEqual(c.target.targetMs, 900)
        XCTAssertNil(told(&c, since: nil, nowMs: 2000).newTargetMs, "nothing new to tell")
        XCTAssertEqual(told(&c, since: nil, nowMs: 31_000).newTargetMs, 0, "let go after 30 s clean")
    }

    /// The output went without while the audio was here (the frame that ended it had waited
    /// longer): a busy machine, which no cushion rides out; the target stays. Audio that came
    /// only then ends a stall of the link, which grows it.
    func testAnUnderrunWithTheAudioHereIsTheMachines() {
        var busy = playout()
        XCTAssertFalse(busy.drop(frameMs: 100, arrival: Instant(ms: 1490 - 500), onTime: nil, at: 1490, silent: { false }))
        XCTAssertNil(told(&busy, since: measure(atMs: 1000, bufferedMs: 300, backlogMs: 400), nowMs: 1500).newTargetMs)
        XCTAssertEqual(busy.target.targetMs, 0)
        var stalled = playout()
        XCTAssertFalse(stalled.drop(frameMs: 100, arrival: Instant(ms: 1490 - 5), onTime: nil, at: 1490, silent: { false }))
        XCTAssertEqual(told(&stalled, since: measure(atMs: 1000, bufferedMs: 300, backlogMs: 0), nowMs: 1500).newTargetMs, 200)
    }

    /// While a backlog waits in the input the sound server is kept full, so the heard delay
    /// stands above a clean link's by more than the input's backlog: a cut at a change takes the
    /// delay's excess over the least measured on the connection (figures of a rig run: 564 ms
    /// clean, 2596 ms after the stalls, 1664 ms the input's least wait, 345 ms in the sound
    /// server), never more than the input and the sound server may hold.
    func testACutTakesTheDelaysExcessOverItsLeast() {
        var c = playout()
        for ms in stride(from: -20_000, through: 1000, by: 420) { c.arrived(Instant(ms: ms)) }  // a page every 420 ms
        XCTAssertEqual(c.cutMs(inputExcessMs: 1664), 1664, "no delay measured yet: the input's backlog")
        settle(&c, delayMs: 564, bufferedMs: 330, atMs: 1000)
        XCTAssertEqual(c.cutMs(inputExcessMs: 400), 400, "the delay at its least: the input's backlog")
        settle(&c, delayMs: 2596, bufferedMs: 345, atMs: 2000)
        XCTAssertEqual(c.cutMs(inputExcessMs: 1664), 2032, "the delay's excess over its least")
        XCTAssertEqual(c.cutMs(inputExcessMs: 250), 250, "a backlog within the margin starts no cut: its measure is not raised")
        // The delay's excess beyond what may be held (the input's least wait, a page, the sound
        // server's fill): a later page, not audio here, which no cut can take.
        XCTAssertEqual(c.cutMs(inputExcessMs: 400), 400 + 420 + 345)
        XCTAssertGreaterThanOrEqual(c.cutMs(inputExcessMs: 2500), 2500, "never less than the input's backlog")
    }

    /// A connection whose pages came every 420 ms up to 1 s, measured then: 560 ms of heard
    /// delay, 300 ms in the sound server (figures of a rig run).
    func cleanLink() -> Playout {
        var c = playout()
        for ms in stride(from: -20_000, through: 1000, by: 420) { c.arrived(Instant(ms: ms)) }
        settle(&c, delayMs: 560, bufferedMs: 300, atMs: 1000)
        return c
    }

    /// A frame of a tone, 100 ms at 1 kHz, whose audio would have arrived at `onTime` and whose
    /// bytes waited `waitedMs`, through the drop (with the changes announced since the last) and,
    /// when not dropped, the padding: nil when dropped.
    func playTone(_ c: inout Playout, onTime: Instant?, waitedMs: Int = 1, changes: [Instant] = [], nowMs: Int) -> Playout.Pad.Treatment? {
        c.announced(changes)
        let now = Instant(ms: nowMs)
        if c.drop(frameMs: 100, arrival: now - waitedMs, onTime: onTime, at: now, silent: { false }) { return nil }
        let t = c.padding(frameMs: 100, onTime: onTime, at: now)
        if t.silenceMs > 0 { c.grew(t.silenceMs) }
        return t
    }

    /// The first frame after a stall of the link that ran the output dry is held until the
    /// listener is the cushion's target behind the least delay (figures of a rig run: a page
    /// every 420 ms, 560 ms of least delay, a 1500 ms stall seen as bytes 1549 ms after the last,
    /// the output dry for 810 ms): the next such stall is ridden out. Once per underrun.
    func testTheFirstFrameAfterAStallIsHeldForTheCushion() {
        var c = cleanLink()
        c.last = measure(atMs: 1000, bufferedMs: 300, backlogMs: 0)
        XCTAssertEqual(c.rebufferMs(at: 1200), 0, "not dry yet")
        c.arrived(Instant(ms: 1000 + 1549))
        _ = playTone(&c, onTime: nil, waitedMs: 1, nowMs: 2110)
        c.last = measure(atMs: 1000, bufferedMs: 300, backlogMs: 0, delayMs: 560)
        XCTAssertEqual(c.rebufferMs(at: 2110), 560 + 1549 - (560 + 810))
        XCTAssertEqual(c.rebufferMs(at: 2150), 0, "once per underrun")
    }

    /// The output went without while the frame had waited longer: a busy machine, no hold.
    func testNoHoldForABusyMachinesUnderrun() {
        var c = playout()
        settle(&c, delayMs: 560, bufferedMs: 300, atMs: 1000)
        c.arrived(500)
        c.arrived(2500)
        _ = playTone(&c, onTime: nil, waitedMs: 900, nowMs: 2110)
        c.last = measure(atMs: 1000, bufferedMs: 300, backlogMs: 0, delayMs: 560)
        XCTAssertEqual(c.rebufferMs(at: 2110), 0)
    }

    /// A stall the link rode out (bytes 900 ms after the last, pages every 420 ms, no underrun)
    /// grows the target, and the next change the server announced makes it up: the listener goes
    /// the target behind the connection's least delay, with silence before the change. Once
    /// there, the next change adds nothing; on a clean link, none does.
    func testARiddenOutStallIsMadeUpAtTheNextChange() {
        var c = cleanLink()
        XCTAssertEqual(playTone(&c, onTime: 500, changes: [3_000], nowMs: 1000), Playout.Pad.Treatment())
        XCTAssertLessThanOrEqual(c.padMs() ?? 0, 0, "a clean link wants nothing more")
        var t = 600
        while t < 5_000 {
            XCTAssertEqual(playTone(&c, onTime: Instant(ms: t), nowMs: 1000 + t), Playout.Pad.Treatment(), "a clean link: no pad at \(t)")
            t += 100
        }
        for ms in stride(from: 1420, through: 6000, by: 420) { c.arrived(Instant(ms: ms)) }
        c.arrived(Instant(ms: 5620 + 900))
        XCTAssertEqual(c.target.targetMs, 900)
        settle(&c, delayMs: 560, bufferedMs: 300, atMs: 7_000)
        _ = c.takeNotes()
        var treated: [Int: Playout.Pad.Treatment] = [:]
        while t < 12_000 {
            if let r = playTone(&c, onTime: Instant(ms: t), changes: t == 5_000 ? [10_000] : [], nowMs: 2_000 + t), r != Playout.Pad.Treatment() {
                treated[t] = r
            }
            t += 100
        }
        XCTAssertEqual(treated[9_800], Playout.Pad.Treatment(silenceMs: 900, mutedMs: 100, paddedChange: 10_000),
                       "the target behind the least, before the window")
        let notes = c.takeNotes()
        XCTAssertEqual(notes.filter { if case .changeHeardLater = $0 { return true } else { return false } },
                       [.changeHeardLater(onTime: 10_000, laterMs: 150)], "the change's new track told heard after the muted window")
        XCTAssertEqual(treated.keys.sorted(), [9_800, 9_900, 10_000, 10_100])
        XCTAssertEqual(notes.filter { if case .grewAtChange = $0 { return true } else { return false } }, [.grewAtChange(900)],
                       "told in the figures, once")
        XCTAssertEqual(treated[10_100]?.mutedMs, 50, "muted to the window's end")
        settle(&c, delayMs: 1460, bufferedMs: 1200, atMs: 14_000)
        XCTAssertEqual(c.padMs(), 0, "made up")
        treated = [:]
        while t < 20_000 {
            if let r = playTone(&c, onTime: Instant(ms: t), changes: t == 12_000 ? [15_000] : [], nowMs: 2_000 + t), r.silenceMs > 0 {
                treated[t] = r
            }
            t += 100
        }
        XCTAssertEqual(treated, [:], "nothing more once made up")
    }

    /// The same stall ridden out, but with a backlog waiting in the input 250 ms beyond the
    /// target (a join on a busy machine left it, and measured the least delay with it): silence
    /// written at the change would make it wait as much longer, beyond the margin (300 ms), and
    /// the cut at the next change would take it back. Only 50 ms fit, under the pad's least: no
    /// pad. With 150 ms less waiting, the pad is made, of the 200 ms that fit. Either way the
    /// next change cuts nothing.
    func testNoPadThatTheCutWouldTakeBack() {
        for (waited, wantPad) in [(1_150, nil), (1_000, 200)] as [(Int, Int?)] {
            var c = cleanLink()
            for ms in stride(from: 1420, through: 6000, by: 420) { c.arrived(Instant(ms: ms)) }
            c.arrived(Instant(ms: 5620 + 900))
            XCTAssertEqual(c.target.targetMs, 900)
            settle(&c, delayMs: 560, bufferedMs: 300, atMs: 7_000)
            var padded: [Int: Int] = [:], dropped: [Int] = []
            var t = 5_000
            while t < 15_000 {
                // What was padded, the frames after it waited as much longer.
                let wait = waited + padded.values.reduce(0, +)
                let changes: [Instant] = t == 5_000 ? [10_000] : t == 11_000 ? [13_000] : []
                switch playTone(&c, onTime: Instant(ms: t), waitedMs: wait, changes: changes, nowMs: 2_000 + t) {
                case nil: dropped.append(t)
                case let r? where r.silenceMs > 0: padded[t] = r.silenceMs
                default: break
                }
                t += 100
            }
            XCTAssertEqual(padded, wantPad.map { [9_800: $0] } ?? [:], "waited \(waited) ms")
            XCTAssertEqual(dropped, [], "cut at a change, waited \(waited) ms")
        }
    }

    /// Before the input has measured its backlog (2 s of frames after a join or a cut), no pad:
    /// a later change makes it up.
    func testNoPadBeforeTheBacklogIsMeasured() {
        var c = playout()
        for ms in stride(from: -20_000, through: 6000, by: 420) { c.arrived(Instant(ms: ms)) }
        c.arrived(Instant(ms: 5620 + 900))
        settle(&c, delayMs: 560, bufferedMs: 300, atMs: 7_000)
        var padded: [Int] = []
        for t in stride(from: 9_000, to: 12_000, by: 100) {
            if let r = playTone(&c, onTime: Instant(ms: t), changes: t == 9_000 ? [10_000] : [], nowMs: 2_000 + t), r.silenceMs > 0 { padded.append(t) }
        }
        XCTAssertEqual(padded, [], "the first frames of a connection")
        for t in stride(from: 12_000, to: 16_000, by: 100) {
            if let r = playTone(&c, onTime: Instant(ms: t), changes: t == 12_000 ? [15_000] : [], nowMs: 2_000 + t), r.silenceMs > 0 { padded.append(t) }
        }
        XCTAssertEqual(padded, [14_800], "made up at the next change")
    }
}
