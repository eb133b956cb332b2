import Foundation
import XCTest

/// `groove-bridge status` shows the cushion against stalls (#24 item 2): the bridge plays through
/// the rig's link; none is kept on a clean link, a stall of the link grows it, and nothing is
/// dropped in the music (the rig's tones have no digital silence): only before a track change;
/// what grew it at a change is counted as the log tells it.
final class CushionStatusTests: DaemonTestCase {
    func testStatusShowsTheCushionAStallGrows() throws {
        let name = "cushion-status"
        try startDaemonOnLink(name)
        func number(_ o: [String: Any], _ key: String) -> Int? { o[key] as? Int }
        var clean: [String: Any] = [:]
        XCTAssertTrue(waitUntil(15) {
            clean = statusObject()
            return clean["stream"] as? String == "playing" && (number(clean, "heard_delay_ms") ?? 0) > 0
        }, status())
        XCTAssertEqual(number(clean, "cushion_target_ms"), 0, "a clean link keeps no cushion: \(status())")
        XCTAssertEqual(number(clean, "cushion_dropped_ms"), 0)
        XCTAssertEqual(number(clean, "cushion_drops"), 0)
        XCTAssertEqual(number(clean, "cushion_grown_ms"), 0, "a clean link grows no cushion at a change")
        XCTAssertNotNil(number(clean, "cushion_backlog_ms"))

        // Stalls of 1500 ms every 2.5 s from 2.5 s after the plan; clean again once one grew the cushion.
        try rig.command(["cmd": "link", "name": name, "plan": ["stall_ms": 1500, "every_s": 2.5]])
        var grown: [String: Any] = [:]
        XCTAssertTrue(waitUntil(10) { grown = statusObject(); return (number(grown, "cushion_target_ms") ?? 0) > 0 },
                      "no cushion after a stall: \(status())")
        try rig.command(["cmd": "link", "name": name, "plan": [String: Any]()])
        XCTAssertLessThanOrEqual(number(grown, "cushion_target_ms") ?? 0, 2000, "beyond the cap")
        // Nothing dropped in the music (the tones hold no digital silence): what was dropped is
        // all cut before track changes the server made, each told in the log just before it is
        // counted, so the figures are those of the log's first cuts (the log, read once the
        // daemon stopped, may tell a cut made since).
        let now = statusObject()
        let log = daemonLog()
        XCTAssertFalse(log.contains("ms of digital silence"), "dropped in the middle of the music")
        let cuts = log.split(separator: "\n").compactMap { l -> Int? in
            guard let r = l.range(of: #"dropped (\d+) ms before the track change"#, options: .regularExpression) else { return nil }
            return Int(l[r].split(separator: " ")[1])
        }
        let drops = try XCTUnwrap(number(now, "cushion_drops"))
        XCTAssertTrue((0...cuts.count).contains(drops), "\(drops) drops counted, \(cuts) in the log")
        XCTAssertEqual(number(now, "cushion_dropped_ms"), cuts.prefix(max(0, min(drops, cuts.count))).reduce(0, +),
                       "dropped other than before a track change: \(cuts)")
        // Silence put before a change to grow the cushion: each told in the log, then counted.
        let grewInLog = log.split(separator: "\n").compactMap { l -> Int? in
            guard let r = l.range(of: #"\d+ ms of silence at the track change"#, options: .regularExpression) else { return nil }
            return Int(l[r].split(separator: " ")[0])
        }
        let grew = try XCTUnwrap(number(now, "cushion_grown_ms"), status())
        XCTAssertTrue((0...grewInLog.count).contains { grewInLog.prefix($0).reduce(0, +) == grew },
                      "\(grew) ms grown at changes counted, \(grewInLog) in the log")
        print("status after a stall: cushion_target_ms \(number(grown, "cushion_target_ms") ?? -1), cushion_backlog_ms "
              + "\(number(grown, "cushion_backlog_ms") ?? -1), heard_delay_ms \(number(clean, "heard_delay_ms") ?? -1) clean, "
              + "\(number(grown, "heard_delay_ms") ?? -1) after; cut before track changes \(cuts) ms")
    }
}
