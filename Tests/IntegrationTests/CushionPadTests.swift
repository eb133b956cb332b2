import Foundation
import Mopidy
import Support
import XCTest

extension DaemonTestCase {
    /// One stall of the rig's link, `ms` long from the first read at or after `ms` + 2 s from
    /// now (`on_read`: the bridge's gap between reads is the stall itself), then a clean link
    /// (set at least 1.5 s before the next stall would begin). When it began and ended
    /// (monotonic µs).
    func stallOnce(_ name: String, ms: Int) throws -> (fromUs: Int64, untilUs: Int64) {
        let plan: [String: Any] = ["stall_ms": ms, "every_s": Double(ms) / 1000 + 2, "on_read": 1]
        let reply = try XCTUnwrap(rig.command(["cmd": "link", "name": name, "plan": plan]) as? [String: Any])
        let since = try XCTUnwrap(reply["since"] as? Double)
        var stall: [String: Any]? = nil
        XCTAssertTrue(try waitUntil(2 * Double(ms) / 1000 + 5) {
            stall = try rig.linkLog(name, since: since).first { $0["event"] as? String == "stall" && $0["connection"] != nil }
            return stall.flatMap { $0["until"] as? Double }.map { Double(monotonicUs()) / 1e6 > $0 } ?? false
        }, "the link did not stall")
        try rig.command(["cmd": "link", "name": name, "plan": [String: Any]()])
        let from = try XCTUnwrap(stall?["from"] as? Double), until = try XCTUnwrap(stall?["until"] as? Double)
        return (Int64(from * 1e6), Int64(until * 1e6))
    }

    /// The cushion grown at a track change (#24 item 2, `Playout.Pad`), through the rig's link with
    /// stalls that each begin as a page arrives (so the gap the bridge sees is the stall, to the
    /// page). The house changes track 4 s after the join (a change the lag of a join on a busy
    /// machine goes at, once the input has measured it; and no change of its own before the
    /// last). A first stall of 1600 ms, longer than all a clean link holds, is heard and grows
    /// the cushion to its length; a second of 2000 ms is ridden out on that cushion (what is
    /// held then is the connection's least delay, ~450–600 ms on the rig, and the cushion: ~300
    /// ms to spare), but shows the link needs 400 ms more than is held (the cushion's cap is
    /// 2000 ms; the pad's least is 150, and in a loaded CI run the heard delay drifted 150 ms
    /// above what the hold after the first stall left). At the next track change the
    /// server makes, that is written as silence between the two tracks, and the audio within
    /// 150 ms either side of the change's estimated moment is silenced (from the start of the
    /// frame that reaches into that window), so neither track is heard on the far side of it:
    /// heard as one gap at the change of the silence told in the log and 300 ms more, up to a
    /// frame (93 ms) and 100 ms of the recording's timing beyond; no gap in the music around it
    /// beyond what the sound server drops of itself; the new title with its music; `status`
    /// counts it.
    func aStallRiddenOutGrowsTheCushionAtTheNextChange() throws {
        let name = "cushion-pad-\(Self.soundKind)"
        try startDaemonOnLink(name, ["--verbose"])
        let (rec, tones, titles, events) = try listen(toneTimeout: 15)
        XCTAssertTrue(waitUntil(5) { events.connected }, "no Mopidy events")
        let joinedUs = monotonicUs()
        XCTAssertTrue(waitUntil(6) { monotonicUs() - joinedUs > 4_000_000 })
        try rig.rpc("core.playback.next")
        let startUs = monotonicUs()
        XCTAssertTrue(waitUntil(6) { monotonicUs() - startUs > 4_000_000 })
        let heardStall = try stallOnce(name, ms: 1600)
        XCTAssertTrue(waitUntil(6) { monotonicUs() - heardStall.untilUs > 4_000_000 })
        let riddenStall = try stallOnce(name, ms: 2000)
        XCTAssertTrue(waitUntil(4) { monotonicUs() - riddenStall.untilUs > 1_000_000 })
        let changeAtUs = monotonicUs()
        try rig.rpc("core.playback.next")
        XCTAssertTrue(waitUntil(12) { monotonicUs() - changeAtUs > 9_000_000 })
        let endUs = monotonicUs()
        let grownStatus = statusObject()["cushion_grown_ms"] as? Int
        let log = daemonLog()
        print(log.split(separator: "\n").filter { $0.contains("stream:") }.joined(separator: "\n"))
        fflush(nil)  // the log, before the process may end

        let grown = log.split(separator: "\n").compactMap { l -> Int? in
            guard let r = l.range(of: #"\d+ ms of silence at the track change"#, options: .regularExpression) else { return nil }
            return Int(l[r].split(separator: " ")[0])
        }
        let started = events.list.withLock { l in
            l.compactMap { e -> (us: Int64, title: String)? in
                guard e.us >= changeAtUs, case .trackPlaybackStarted(let tl) = e.event else { return nil }
                return (e.us, tl.track.name ?? "")
            }
        }.first
        let change = try XCTUnwrap(started, "Mopidy told no track change")
        let freq = try XCTUnwrap(rig.track(titled: change.title)?.freq)
        let heardUs = try XCTUnwrap(rec.firstHeard(freq, candidates: tones, fromUs: change.us), "\(change.title) was not heard")
        let gaps = rec.gaps(fromUs: startUs, toUs: endUs, candidates: tones)
        func near(_ g: HeardGap) -> Bool { g.us > heardUs - 2_000_000 && g.us < heardUs + 1_000 }
        let atChange = gaps.filter { !$0.midTrack && near($0) }
        let titleMs = titles.first(change.title, fromUs: change.us - 100_000).map { Int(($0 - heardUs) / 1000) }
        print("cushion grown at a change (\(Self.soundKind)): silence told \(grown) ms, status \(grownStatus.map(String.init) ?? "none"); "
              + "gaps at the change \(atChange.text(fromUs: startUs)); mid-track \(gaps.filter(\.midTrack).text(fromUs: startUs)); the stalls "
              + "\(Double(heardStall.fromUs - startUs) / 1e6) s and \(Double(riddenStall.fromUs - startUs) / 1e6) s; "
              + "the new track heard \(Double(heardUs - change.us) / 1e6) s after Mopidy's event, its title \(titleMs.map(String.init) ?? "none") ms after")
        fflush(nil)  // the figures, before the process may end

        let heardStalls = log.components(separatedBy: "stream: the link stalled beyond what was here").count - 1
        XCTAssertEqual(heardStalls, 1, "the first stall heard and the second ridden out: \(heardStalls) heard")
        XCTAssertEqual(grown.count, 1, "silence at one change, the one after the stall ridden out: \(grown)")
        let silence = try XCTUnwrap(grown.first)
        XCTAssertTrue(silence > 150 && silence <= 600, "\(silence) ms of silence at the change, for 400 ms more wanted")
        XCTAssertEqual(grownStatus, silence, "status counts the silence at the change")
        XCTAssertEqual(atChange.count, 1, "gaps at the change: \(atChange.text(fromUs: startUs))")
        if let g = atChange.first {
            XCTAssertGreaterThanOrEqual(g.ms, silence + 300 - 30, "the silence at the change, and its window, not heard")
            XCTAssertLessThanOrEqual(g.ms, silence + 300 + 93 + 100, "more than the silence and its window at the change")
        }
        // The second stall ridden out, and nothing silenced in the music: no gap mid-track from
        // it on beyond what the sound server drops of itself.
        XCTAssertEqual(gaps.filter { $0.midTrack && $0.us > riddenStall.fromUs && $0.ms > soundServerOwnGapMs }.map(\.ms), [],
                       "gaps mid-track from the stall ridden out on")
        XCTAssertLessThanOrEqual(abs(titleMs ?? Int.max), 250, "the new title is not with its music")
    }
}

final class CushionPadTests: DaemonTestCase {
    func testAStallRiddenOutGrowsTheCushionAtTheNextChange() throws { try aStallRiddenOutGrowsTheCushionAtTheNextChange() }
}

final class PipeWireCushionPadTests: DaemonTestCase {
    override class var soundKind: String { "pipewire" }
    func testAStallRiddenOutGrowsTheCushionAtTheNextChange() throws { try aStallRiddenOutGrowsTheCushionAtTheNextChange() }
}
