import Audio
import Foundation
import Support
import XCTest

extension StreamAudioTestCase {
    /// A player on a clean rig link of its own, `name`, heard and measured, then `cleanSeconds`
    /// on that link: the player and its figures then.
    func playOnLink(_ name: String, cleanSeconds: Int64) throws -> (StreamPlayer, StreamFigures) {
        let link = try XCTUnwrap(rig.command(["cmd": "link", "name": name, "plan": [String: Any]()]) as? [String: Any])
        let p = player(try XCTUnwrap(link["stream_url"] as? String))
        p.play()
        XCTAssertNotNil(recorder.waitForTone(try expectedTone(), candidates: tones, timeout: 8), "no tone")
        XCTAssertTrue(waitUntil(5) { p.currentFigures.localDelayMs > 0 }, "no heard delay")
        let joinedAt = monotonicUs()
        // A clean while (a window, not an event).
        XCTAssertTrue(waitUntil(Double(cleanSeconds) + 4) { monotonicUs() - joinedAt > cleanSeconds * 1_000_000 })
        return (p, p.currentFigures)
    }

    /// The cushion against stalls (#24 item 2), through the rig's link: the player plays the
    /// rig's tones; a Wi-Fi-like stall (the link holds the stream, then releases it as a burst)
    /// shows the player that the link needs a cushion. Asserted: a clean link keeps none (or what
    /// a busy machine's underrun asks, less than a stall's); the first stall grows it to a stall's
    /// before the second stall comes; it stays while the stalls go on and
    /// goes once the link has been clean for 30 s (within 60 s of the link healing); nothing
    /// is dropped in the music meanwhile (tones: no digital silence); the music plays on after
    /// the server pauses (its silence is where a backlog may be dropped). Figures printed.
    func cushionGrowsWithStallsAndGoesOnACleanLink() throws {
        let name = "cushion-\(Self.soundKind)"
        let (p, clean) = try playOnLink(name, cleanSeconds: 6)
        // No stall seen: nothing kept, or at most what an underrun of a busy machine asked for
        // (PipeWire's output here runs dry for ~0.1 s now and then).
        XCTAssertLessThan(clean.cushionTargetMs, 600, "a clean link keeps no stall's cushion")

        // Stalls of 1500 ms every 7.5 s: the first from 7.5 s after the plan, the second from 15 s.
        let stalls = try XCTUnwrap(rig.command(["cmd": "link", "name": name, "plan": ["stall_ms": 1500, "every_s": 7.5]]) as? [String: Any])
        let sinceUs = Int64(try XCTUnwrap(stalls["since"] as? Double) * 1_000_000)
        var grown = p.currentFigures
        XCTAssertTrue(waitUntil(20) { grown = p.currentFigures; return grown.cushionTargetMs >= 1000 }, "no stall grew the cushion")
        let grownUs = monotonicUs()
        XCTAssertLessThan(grownUs, sinceUs + 15_000_000, "the cushion grew only after the second stall began")
        XCTAssertGreaterThan(grownUs, sinceUs + 7_500_000, "a stall's cushion before the first stall")
        XCTAssertTrue(waitUntil(30) { monotonicUs() - sinceUs > 31_000_000 })  // four stalls (a window, not an event)
        let stalled = p.currentFigures
        XCTAssertGreaterThan(stalled.cushionTargetMs, 0, "the cushion went while the stalls went on")
        XCTAssertLessThanOrEqual(stalled.cushionTargetMs, 2000, "beyond the cap")
        // The first stall is heard when the join left less than it (a moment longer than it ran
        // the output dry), and the three after it are not: no gap of 150 ms or more, mid-track
        // or where the rig's track changes, after the first's (a busy machine's own underruns
        // are shorter).
        let gaps = recorder.gaps(fromUs: sinceUs + 7_500_000, toUs: monotonicUs(), candidates: tones).filter { $0.ms >= 150 }
        let later = gaps.dropFirst().filter { $0.us > gaps[0].us + Int64(gaps[0].ms) * 1000 + 1_000_000 }
        XCTAssertEqual(later.map(\.ms), [], "stalls heard after the first: \(later.text(fromUs: sinceUs))")

        // The link heals: the cushion goes 30 s after the last sign of need, within 60 s.
        let healed = try XCTUnwrap(rig.command(["cmd": "link", "name": name, "plan": [String: Any]()]) as? [String: Any])
        let healedUs = Int64(try XCTUnwrap(healed["since"] as? Double) * 1_000_000)
        var let_go = p.currentFigures
        XCTAssertTrue(waitUntil(65) { let_go = p.currentFigures; return let_go.cushionTargetMs == 0 },
                      "the cushion was kept 60 s after the link healed: \(let_go.cushionTargetMs) ms")
        let letGoUs = monotonicUs()
        XCTAssertLessThan(letGoUs - healedUs, 60_000_000)
        XCTAssertGreaterThan(letGoUs - healedUs, 20_000_000, "the cushion went before the link was clean for long")
        XCTAssertEqual(let_go.droppedForLiveMs, 0, "dropped in the middle of the music")
        XCTAssertNotNil(recorder.waitForTone(try expectedTone(), candidates: tones, timeout: 5), "no tone after the stalls")

        // The server pauses for 3 s: its silence is where a backlog beyond the margin is dropped.
        try rig.rpc("core.playback.pause")
        var resumed = false
        defer { if !resumed { _ = try? rig.rpc("core.playback.resume") } }
        let pausedAt = monotonicUs()
        XCTAssertTrue(waitUntil(5) { monotonicUs() - pausedAt > 3_000_000 })  // the pause's length (a window, not an event)
        try rig.rpc("core.playback.resume")
        resumed = true
        XCTAssertNotNil(recorder.waitForTone(try expectedTone(), candidates: tones, timeout: 8), "no tone after the server's pause")
        let after = p.currentFigures
        print("cushion (\(Self.soundKind)): gaps of the stalls \(gaps.text(fromUs: sinceUs)); target \(grown.cushionTargetMs) ms \(Double(grownUs - sinceUs) / 1e6) s after the stalls began, "
              + "\(stalled.cushionTargetMs) ms after four, let go \(Double(letGoUs - healedUs) / 1e6) s after the link healed; "
              + "heard delay \(clean.localDelayMs) ms clean, \(stalled.localDelayMs) after the stalls, \(let_go.localDelayMs) when let go, "
              + "\(after.localDelayMs) after the server's pause; input backlog \(stalled.inputBacklogMs) / \(let_go.inputBacklogMs) / "
              + "\(after.inputBacklogMs) ms; dropped \(after.droppedForLiveMs) ms in \(after.dropsForLive) run(s)")
    }

    /// Short stalls, the link most Wi-Fi is (#24's "500 ms stalls every 5 s"): a 500 ms stall
    /// delays the next Ogg page by 80–500 ms, by where in the page rhythm (~0.42 s) it falls, and
    /// a clean link holds less than the worst of that here (its lag stays near 1 s behind the
    /// server), so one stall may be heard. Asserted: at most one is (gaps of 150 ms or more, each
    /// within 1 s of the one before, and none after; the hold after a stall that ran the output
    /// dry makes it longer, so that the next ones are ridden out), and a stall heard leaves a
    /// cushion. Eight stalls; figures and the player's log printed.
    func shortStallsAreHeardAtMostOnce() throws {
        let name = "short-stalls-\(Self.soundKind)"
        let level = Log.level
        Log.setLevel(.debug)  // what the player saw of each stall, with the figures
        defer { Log.setLevel(level) }
        let (p, clean) = try playOnLink(name, cleanSeconds: 4)

        // Stalls of 500 ms every 5 s: the first from 5 s after the plan, the eighth from 40 s, the
        // ninth (from 45 s) not waited for.
        let stalls = try XCTUnwrap(rig.command(["cmd": "link", "name": name, "plan": ["stall_ms": 500, "every_s": 5]]) as? [String: Any])
        let sinceUs = Int64(try XCTUnwrap(stalls["since"] as? Double) * 1_000_000)
        XCTAssertTrue(waitUntil(53) { monotonicUs() - sinceUs > 44_000_000 })  // eight stalls, the last heard (a window, not an event)
        let endUs = monotonicUs()
        let stalled = p.currentFigures
        try rig.command(["cmd": "link", "name": name, "plan": [String: Any]()])
        let gaps = recorder.gaps(fromUs: sinceUs + 4_000_000, toUs: endUs, candidates: tones)
        // A stall heard may come out as more than one gap (on PipeWire the output's last few ms
        // play between the stall's silence and the hold's): gaps within 1 s of the one before are
        // one stall heard.
        var heard: [[HeardGap]] = []
        for g in gaps where g.ms >= 150 {
            if let last = heard.last?.last, g.us <= last.us + Int64(last.ms) * 1000 + 1_000_000 {
                heard[heard.count - 1].append(g)
            } else {
                heard.append([g])
            }
        }
        let later = heard.dropFirst().flatMap { $0 }
        print("short stalls (\(Self.soundKind)): gaps \(gaps.text(fromUs: sinceUs)); heard delay \(clean.localDelayMs) ms clean, "
              + "\(stalled.localDelayMs) ms after eight stalls; cushion \(stalled.cushionTargetMs) ms; input backlog \(stalled.inputBacklogMs) ms")
        fflush(nil)  // the figures, before the process may end
        XCTAssertEqual(later.map(\.ms), [], "stalls heard after the first: \(later.text(fromUs: sinceUs))")
        if !heard.isEmpty { XCTAssertGreaterThan(stalled.cushionTargetMs, 0, "a stall was heard, and no cushion kept") }
    }
}

final class CushionTests: StreamAudioTestCase {
    func testCushionGrowsWithStallsAndGoesOnACleanLink() throws { try cushionGrowsWithStallsAndGoesOnACleanLink() }
    func testShortStallsAreHeardAtMostOnce() throws { try shortStallsAreHeardAtMostOnce() }
}

final class PipeWireCushionTests: StreamAudioTestCase {
    override class var soundKind: String { "pipewire" }

    func testCushionGrowsWithStallsAndGoesOnACleanLink() throws { try cushionGrowsWithStallsAndGoesOnACleanLink() }
    func testShortStallsAreHeardAtMostOnce() throws { try shortStallsAreHeardAtMostOnce() }
}
