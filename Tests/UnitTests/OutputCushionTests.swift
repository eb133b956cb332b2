@testable import Audio
import Synchronization
import XCTest

/// The output's side of the cushion: an underrun seen between two measures of the delay grows
/// the target; what the log and the figures are told.
final class OutputCushionTests: XCTestCase {
    /// The figures of a measure at `atMs`: `bufferedMs` in the sound server, `backlogMs` in the input.
    func measure(atMs: Int, bufferedMs: Int, backlogMs: Int) -> StreamFigures {
        var f = StreamFigures()
        f.localDelayMs = 900
        f.bufferedMs = bufferedMs
        f.delayMeasuredAtMs = atMs
        f.inputBacklogMs = backlogMs
        return f
    }

    func testAnUnderrunBetweenMeasuresGrowsTheTargetOnce() {
        var c = OutputCushion(learned: CushionTarget(capMs: 2000, cleanMs: 30_000, bufferMs: 600))
        // 300 ms in the sound server at 1000, the next write at 1500: it had nothing for 200 ms.
        let first = c.measured(since: measure(atMs: 1000, bufferedMs: 300, backlogMs: 100), nowMs: 1500)
        XCTAssertEqual(first.newTargetMs, 300, "what it lacked on top of the backlog it had")
        XCTAssertEqual(first.droppedMs, 0)
        let second = c.measured(since: measure(atMs: 1500, bufferedMs: 400, backlogMs: 0), nowMs: 1600)
        XCTAssertNil(second.newTargetMs, "no underrun, no change to tell")
        XCTAssertEqual(c.target.targetMs, 300)
    }

    /// The sound server's reports are rough: 20 ms short is no underrun.
    func testAReportAFewMsShortIsNoUnderrun() {
        var c = OutputCushion(learned: CushionTarget())
        let r = c.measured(since: measure(atMs: 1000, bufferedMs: 300, backlogMs: 0), nowMs: 1320)
        XCTAssertNil(r.newTargetMs)
        XCTAssertEqual(c.target.targetMs, 0)
    }

    /// A new connection keeps what the link taught, not the gap before its first byte.
    func testANewConnectionKeepsTheLearnedTarget() {
        var learned = CushionTarget(capMs: 2000, cleanMs: 30_000, bufferMs: 600)
        learned.underran(starvedMs: 900, backlogMs: 0, nowMs: 1000)
        var c = OutputCushion(learned: learned)
        c.arrived(atMs: 50_000)
        XCTAssertEqual(c.target.targetMs, 900)
        XCTAssertNil(c.measured(since: StreamFigures(), nowMs: 2000).newTargetMs, "nothing new to tell")
        XCTAssertEqual(c.measured(since: StreamFigures(), nowMs: 31_000).newTargetMs, 0, "let go after 30 s clean")
    }
}

extension OutputCushionTests {
    /// The output went without while the audio was here (the frame that ended it had waited
    /// longer): a busy machine, which no cushion rides out; the target stays. Audio that came
    /// only then ends a stall of the link, which grows it.
    func testAnUnderrunWithTheAudioHereIsTheMachines() {
        let format = AudioFormat(sampleRate: 1000, channels: 1, bitsPerSample: 16)
        let plane = [Int32](repeating: 4000, count: 100)
        func decoded(_ c: inout OutputCushion, waitedMs: Int, nowMs: Int) {
            plane.withUnsafeBufferPointer { l in
                let planes: [UnsafePointer<Int32>?] = [l.baseAddress]
                planes.withUnsafeBufferPointer { p in
                    let f = DecodedFrame(format: format, samples: 100, planes: p.baseAddress!)
                    XCTAssertFalse(c.drop(f, arrivalMs: nowMs - waitedMs, onTimeMs: nil, changes: [], nowMs: nowMs, stats: StreamStats()))
                }
            }
        }
        var busy = OutputCushion(learned: CushionTarget(capMs: 2000, cleanMs: 30_000, bufferMs: 600))
        decoded(&busy, waitedMs: 500, nowMs: 1490)
        XCTAssertNil(busy.measured(since: measure(atMs: 1000, bufferedMs: 300, backlogMs: 400), nowMs: 1500).newTargetMs)
        XCTAssertEqual(busy.target.targetMs, 0)
        var stalled = OutputCushion(learned: CushionTarget(capMs: 2000, cleanMs: 30_000, bufferMs: 600))
        decoded(&stalled, waitedMs: 5, nowMs: 1490)
        XCTAssertEqual(stalled.measured(since: measure(atMs: 1000, bufferedMs: 300, backlogMs: 0), nowMs: 1500).newTargetMs, 200)
    }
}

extension OutputCushionTests {
    /// While a backlog waits in the input the sound server is kept full, so the heard delay
    /// stands above a clean link's by more than the input's backlog: a cut at a change takes the
    /// delay's excess over the least measured on the connection (figures of a rig run: 564 ms
    /// clean, 2596 ms after the stalls, 1664 ms the input's least wait, 345 ms in the sound
    /// server), never more than the input and the sound server may hold.
    func testACutTakesTheDelaysExcessOverItsLeast() {
        let stats = StreamStats()
        var c = OutputCushion(learned: CushionTarget(capMs: 2000, cleanMs: 30_000, bufferMs: 600))
        for ms in stride(from: -20_000, through: 1000, by: 420) { c.arrived(atMs: ms) }  // a page every 420 ms
        XCTAssertEqual(c.cutMs(inputExcessMs: 1664), 1664, "no delay measured yet: the input's backlog")
        stats.output(bufferedMs: 330, delayMs: 564, atMs: 1000)
        c.measured(delayMs: 564, stats: stats, nowMs: 1000)
        XCTAssertEqual(c.cutMs(inputExcessMs: 400), 400, "the delay at its least: the input's backlog")
        stats.output(bufferedMs: 345, delayMs: 2596, atMs: 2000)
        c.measured(delayMs: 2596, stats: stats, nowMs: 2000)
        XCTAssertEqual(c.cutMs(inputExcessMs: 1664), 2032, "the delay's excess over its least")
        XCTAssertEqual(c.cutMs(inputExcessMs: 250), 250, "a backlog within the margin starts no cut: its measure is not raised")
        // The delay's excess beyond what may be held (the input's least wait, a page, the sound
        // server's fill): a later page, not audio here, which no cut can take.
        XCTAssertEqual(c.cutMs(inputExcessMs: 400), 400 + 420 + 345)
        XCTAssertGreaterThanOrEqual(c.cutMs(inputExcessMs: 2500), 2500, "never less than the input's backlog")
    }
}

extension OutputCushionTests {
    /// A connection whose pages came every 420 ms up to 1 s, measured then: 560 ms of heard
    /// delay, 300 ms in the sound server (figures of a rig run).
    func cleanLink(_ stats: StreamStats) -> OutputCushion {
        var c = OutputCushion(learned: CushionTarget(capMs: 2000, cleanMs: 30_000, bufferMs: 600))
        for ms in stride(from: -20_000, through: 1000, by: 420) { c.arrived(atMs: ms) }
        stats.output(bufferedMs: 300, delayMs: 560, atMs: 1000)
        c.measured(delayMs: 560, stats: stats, nowMs: 1000)
        return c
    }

    /// A frame whose bytes waited `waitedMs`, decoded at `nowMs`.
    func decodeTone(_ c: inout OutputCushion, waitedMs: Int, nowMs: Int) {
        _ = playTone(&c, onTimeMs: nil, waitedMs: waitedMs, nowMs: nowMs)
    }

    /// The first frame after a stall of the link that ran the output dry is held until the
    /// listener is the cushion's target behind the least delay (figures of a rig run: a page
    /// every 420 ms, 560 ms of least delay, a 1500 ms stall seen as bytes 1549 ms after the last,
    /// the output dry for 810 ms): the next such stall is ridden out. Once per underrun.
    func testTheFirstFrameAfterAStallIsHeldForTheCushion() {
        let stats = StreamStats()
        var c = cleanLink(stats)
        let before = measure(atMs: 1000, bufferedMs: 300, backlogMs: 0)
        XCTAssertEqual(c.rebufferMs(since: before, nowMs: 1200), 0, "not dry yet")
        c.arrived(atMs: 1000 + 1549)
        decodeTone(&c, waitedMs: 1, nowMs: 2110)
        var last = before
        last.localDelayMs = 560
        XCTAssertEqual(c.rebufferMs(since: last, nowMs: 2110), 560 + 1549 - (560 + 810))
        XCTAssertEqual(c.rebufferMs(since: last, nowMs: 2150), 0, "once per underrun")
    }

    /// The output went without while the frame had waited longer: a busy machine, no hold.
    func testNoHoldForABusyMachinesUnderrun() {
        let stats = StreamStats()
        var c = OutputCushion(learned: CushionTarget(capMs: 2000, cleanMs: 30_000, bufferMs: 600))
        stats.output(bufferedMs: 300, delayMs: 560, atMs: 1000)
        c.measured(delayMs: 560, stats: stats, nowMs: 1000)
        c.arrived(atMs: 500)
        c.arrived(atMs: 2500)
        decodeTone(&c, waitedMs: 900, nowMs: 2110)
        var last = measure(atMs: 1000, bufferedMs: 300, backlogMs: 0)
        last.localDelayMs = 560
        XCTAssertEqual(c.rebufferMs(since: last, nowMs: 2110), 0)
    }
}

extension OutputCushionTests {
    /// A frame of a tone, 100 ms at 1 kHz, whose audio would have arrived at `onTimeMs` and whose
    /// bytes waited `waitedMs`, through `drop` (with the changes announced since the last) and,
    /// when not dropped, `padding`: nil when dropped.
    func playTone(_ c: inout OutputCushion, onTimeMs: Int?, waitedMs: Int = 1, changes: [Int] = [], nowMs: Int,
                  stats: StreamStats = StreamStats()) -> ChangePad.Treatment? {
        let format = AudioFormat(sampleRate: 1000, channels: 1, bitsPerSample: 16)
        let plane = [Int32](repeating: 4000, count: 100)
        return plane.withUnsafeBufferPointer { l in
            let planes: [UnsafePointer<Int32>?] = [l.baseAddress]
            return planes.withUnsafeBufferPointer { p in
                let f = DecodedFrame(format: format, samples: 100, planes: p.baseAddress!)
                if c.drop(f, arrivalMs: nowMs - waitedMs, onTimeMs: onTimeMs, changes: changes, nowMs: nowMs, stats: stats) { return nil }
                let t = c.padding(f, onTimeMs: onTimeMs, nowMs: nowMs, stats: stats)
                if t.silenceMs > 0 { c.grew(t.silenceMs, beforeMs: c.lastDelayMs, stats: stats) }
                return t
            }
        }
    }

    /// A stall the link rode out (bytes 900 ms after the last, pages every 420 ms, no underrun)
    /// grows the target, and the next change the server announced makes it up: the listener goes
    /// the target behind the connection's least delay, with silence before the change. Once
    /// there, the next change adds nothing; on a clean link, none does.
    func testARiddenOutStallIsMadeUpAtTheNextChange() {
        let stats = StreamStats()
        var c = cleanLink(stats)
        XCTAssertEqual(playTone(&c, onTimeMs: 500, changes: [3_000], nowMs: 1000), ChangePad.Treatment())
        XCTAssertLessThanOrEqual(c.padMs() ?? 0, 0, "a clean link wants nothing more")
        var t = 600
        while t < 5_000 {
            XCTAssertEqual(playTone(&c, onTimeMs: t, nowMs: 1000 + t), ChangePad.Treatment(), "a clean link: no pad at \(t)")
            t += 100
        }
        for ms in stride(from: 1420, through: 6000, by: 420) { c.arrived(atMs: ms) }
        c.arrived(atMs: 5620 + 900)
        XCTAssertEqual(c.target.targetMs, 900)
        stats.output(bufferedMs: 300, delayMs: 560, atMs: 7_000)
        c.measured(delayMs: 560, stats: stats, nowMs: 7_000)
        let later = Mutex<[[Int]]>([])
        stats.onChangeHeardLater { onTime, ms in later.withLock { $0.append([onTime, ms]) } }
        var treated: [Int: ChangePad.Treatment] = [:]
        while t < 12_000 {
            if let r = playTone(&c, onTimeMs: t, changes: t == 5_000 ? [10_000] : [], nowMs: 2_000 + t, stats: stats), r != ChangePad.Treatment() { treated[t] = r }
            t += 100
        }
        XCTAssertEqual(treated[9_800], ChangePad.Treatment(silenceMs: 900, mutedMs: 100, paddedChangeMs: 10_000),
                       "the target behind the least, before the window")
        XCTAssertEqual(later.withLock { $0 }, [[10_000, 150]], "the change's new track told heard after the muted window")
        XCTAssertEqual(treated.keys.sorted(), [9_800, 9_900, 10_000, 10_100])
        XCTAssertEqual(stats.snapshot.grownAtChangesMs, 900, "told in the figures")
        XCTAssertEqual(stats.snapshot.growthsAtChanges, 1)
        XCTAssertEqual(treated[10_100]?.mutedMs, 50, "muted to the window's end")
        stats.output(bufferedMs: 1200, delayMs: 1460, atMs: 14_000)
        c.measured(delayMs: 1460, stats: stats, nowMs: 14_000)
        XCTAssertEqual(c.padMs(), 0, "made up")
        treated = [:]
        while t < 20_000 {
            if let r = playTone(&c, onTimeMs: t, changes: t == 12_000 ? [15_000] : [], nowMs: 2_000 + t, stats: stats), r.silenceMs > 0 { treated[t] = r }
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
            let stats = StreamStats()
            var c = cleanLink(stats)
            for ms in stride(from: 1420, through: 6000, by: 420) { c.arrived(atMs: ms) }
            c.arrived(atMs: 5620 + 900)
            XCTAssertEqual(c.target.targetMs, 900)
            stats.output(bufferedMs: 300, delayMs: 560, atMs: 7_000)
            c.measured(delayMs: 560, stats: stats, nowMs: 7_000)
            var padded: [Int: Int] = [:], dropped: [Int] = []
            var t = 5_000
            while t < 15_000 {
                // What was padded, the frames after it waited as much longer.
                let wait = waited + padded.values.reduce(0, +)
                switch playTone(&c, onTimeMs: t, waitedMs: wait, changes: t == 5_000 ? [10_000] : t == 11_000 ? [13_000] : [],
                                nowMs: 2_000 + t, stats: stats) {
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
        let stats = StreamStats()
        var c = OutputCushion(learned: CushionTarget(capMs: 2000, cleanMs: 30_000, bufferMs: 600))
        for ms in stride(from: -20_000, through: 6000, by: 420) { c.arrived(atMs: ms) }
        c.arrived(atMs: 5620 + 900)
        stats.output(bufferedMs: 300, delayMs: 560, atMs: 7_000)
        c.measured(delayMs: 560, stats: stats, nowMs: 7_000)
        var padded: [Int] = []
        for t in stride(from: 9_000, to: 12_000, by: 100) {
            if let r = playTone(&c, onTimeMs: t, changes: t == 9_000 ? [10_000] : [], nowMs: 2_000 + t, stats: stats), r.silenceMs > 0 { padded.append(t) }
        }
        XCTAssertEqual(padded, [], "the first frames of a connection")
        for t in stride(from: 12_000, to: 16_000, by: 100) {
            if let r = playTone(&c, onTimeMs: t, changes: t == 12_000 ? [15_000] : [], nowMs: 2_000 + t, stats: stats), r.silenceMs > 0 { padded.append(t) }
        }
        XCTAssertEqual(padded, [14_800], "made up at the next change")
    }
}
