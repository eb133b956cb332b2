import DBus
import Foundation
import Support
import XCTest

/// Issue #16 on real parts: Icecast and Mopidy killed and restarted, logind's and
/// NetworkManager's real signals on a system bus of the rig's own, the music heard through the
/// null sink.
final class ResilienceTests: SystemBusTestCase {
    /// Outages of the whole server: 3, 10 and 30 s in the suite (`GROOVE_OUTAGES=3,10,30,90` for
    /// the benchmark's longer list; every outage under two minutes meets the same fast retries,
    /// `RetrySchedule.fastForMs`). Mopidy is started first, timed to be back just ahead of Icecast
    /// (its start takes about 0.7 s), so that when Icecast takes listeners again the music is there
    /// to be heard; the time measured is from then (the stream mount live again, polled every
    /// 10 ms) to the music heard here, and from Icecast accepting connections. Goal (issue #16):
    /// median ≤ 1.5 s, worst ≤ 3 s. The table is printed for BENCHMARKS.md.
    func testServerOutages() throws {
        let listed = (ProcessInfo.processInfo.environment["GROOVE_OUTAGES"] ?? "3,10,30")
            .split(separator: ",").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }.filter { $0 >= 2 && $0 <= 600 }
        let outages = listed.isEmpty ? [3, 10, 30] : listed
        var rows = ["| outage | Icecast down | Mopidy down | accepting → mount live | mount live → music | accepting → music |",
                    "| --- | --- | --- | --- | --- | --- |"]
        var fromLive: [Double] = []
        var restarted = true
        defer { if !restarted { _ = try? rig.start("mopidy"); _ = try? rig.start("icecast") } }
        for outage in outages {
            XCTAssertNotNil(recorder!.waitForTone(try expectedTone(), candidates: tones, timeout: 15),
                            "no music ahead of the \(outage) s outage")
            restarted = false
            let down = monotonicUs()
            try rig.stop("icecast", signal: "KILL")
            try rig.stop("mopidy", signal: "KILL")
            let mopidyDown = monotonicUs()
            sleepUntil(down + Int64((outage - 1) * 1_000_000))
            try rig.start("mopidy")
            let mopidyBack = monotonicUs()
            sleepUntil(down + Int64(outage * 1_000_000))
            let accepting = try rig.start("icecast")
            let live = try rig.waitLive()
            restarted = true
            guard let heard = firstMusic(fromUs: live, timeout: 10) else {
                XCTFail("no music within 10 s of the mount taking listeners after a \(outage) s outage: \(status())")
                continue
            }
            let s = { (us: Int64) in String(format: "%.2f s", Double(us) / 1e6) }
            fromLive.append(Double(heard - live) / 1e6)
            rows.append("| \(Int(outage)) s | \(s(accepting - down)) | \(s(mopidyBack - mopidyDown)) | \(s(live - accepting)) "
                        + "| \(s(heard - live)) | \(s(heard - accepting)) |")
            XCTAssertTrue(waitUntil(10) { statusObject()["events"] as? String == "connected" }, "events: \(status())")
        }
        print("Outage → music (ResilienceTests.testServerOutages):\n" + rows.joined(separator: "\n"))
        print(String(format: "mount live → music: median %.2f s, worst %.2f s", median(fromLive), fromLive.max() ?? .nan))
        XCTAssertEqual(fromLive.count, outages.count)
        XCTAssertLessThanOrEqual(median(fromLive), 1.5, rows.joined(separator: "\n"))
        XCTAssertLessThanOrEqual(fromLive.max() ?? .infinity, 3.0, rows.joined(separator: "\n"))
    }

    /// PrepareForSleep(true): the stream stops cleanly and PlaybackStatus is Paused; false: the
    /// music is back within 1.5 s (three cycles), and the events socket reconnected. Asleep
    /// while paused here, it stays paused after wake.
    func testSuspendAndResume() throws {
        // The daemon's log as it comes (daemonLog() would stop the daemon to read it).
        let logged = try XCTUnwrap(output)
        var times: [Double] = []
        for cycle in 1...3 {
            XCTAssertNotNil(recorder!.waitForTone(try expectedTone(), candidates: tones, timeout: 10), "cycle \(cycle)")
            let reconnects = statusObject()["event_reconnects"] as? Int ?? -1
            system.prepareForSleep(true)
            XCTAssertTrue(waitUntil(2) { (try? playerctl("status")) == "Paused" }, "not Paused while asleep")
            XCTAssertTrue(waitUntil(2) { recorder!.recentTone(ms: 200, candidates: tones) == nil }, "music while asleep")
            XCTAssertEqual(statusObject()["asleep"] as? Bool, true)
            usleep(1_500_000)  // how long the machine sleeps, not a wait for an event
            let woke = monotonicUs()
            system.prepareForSleep(false)
            guard let heard = firstMusic(fromUs: woke, timeout: 6) else { return XCTFail("no music after wake: \(status())") }
            times.append(Double(heard - woke) / 1e6)
            XCTAssertTrue(waitUntil(2) { (try? playerctl("status")) == "Playing" })
            XCTAssertEqual(statusObject()["events"] as? String, "connected")
            XCTAssertEqual(statusObject()["event_reconnects"] as? Int, reconnects, "the events socket is replaced, not lost")
        }
        print("PrepareForSleep(false) → music: " + times.map { String(format: "%.2f s", $0) }.joined(separator: ", "))
        XCTAssertLessThanOrEqual(times.max() ?? .infinity, 1.5, "\(times)")

        try playerctl("pause")
        XCTAssertTrue(waitUntil(2) { (try? playerctl("status")) == "Paused" })
        system.prepareForSleep(true)
        XCTAssertTrue(waitUntil(2) { statusObject()["asleep"] as? Bool == true }, status())
        func resumes() -> [Substring] { logged.text.split(separator: "\n").filter { $0.contains("resumed from suspend") } }
        let resumedBefore = resumes().count
        system.prepareForSleep(false)
        // The wake's decision, listening again or not, is the line it logs: asserted after it.
        XCTAssertTrue(waitUntil(5) { resumes().count == resumedBefore + 1 }, logged.text)
        XCTAssertFalse(resumes().last?.contains("listening again") ?? true, "listening after wake though paused when sleep came")
        XCTAssertEqual(try playerctl("status"), "Paused", "listening after wake though paused when sleep came")
        // Music would come 0.8 s after a decision to listen: the decision is what is asserted.
        let log = logged.text
        XCTAssertTrue(log.contains("suspend and resume followed (logind)"), log)
        XCTAssertTrue(log.contains("resumed from suspend: reconnecting and listening again"), log)
    }

    /// No network: a failed stream is not retried (status says "no network"); the network back:
    /// retried at once, whatever the schedule, and the music is back.
    func testNoNetworkHoldsRetriesAndItsReturnBringsTheMusicBack() throws {
        XCTAssertNotNil(recorder!.waitForTone(try expectedTone(), candidates: tones, timeout: 10))
        system.networkState(20)
        XCTAssertTrue(waitUntil(2) { statusObject()["network"] as? String == "no network" }, status())
        try rig.stop("icecast", signal: "KILL")
        var restarted = false
        defer { if !restarted { _ = try? rig.start("icecast") } }
        XCTAssertTrue(waitUntil(3) { (statusObject()["stream"] as? String ?? "").hasPrefix("no network") }, status())
        usleep(300_000)
        let before = statusObject()["stream_reconnects"] as? Int ?? -1
        _ = try rig.start("icecast")
        _ = try rig.waitLive()
        restarted = true
        usleep(3_000_000)
        XCTAssertEqual(statusObject()["stream_reconnects"] as? Int, before, "retried without a network")
        XCTAssertNil(recorder!.recentTone(ms: 500, candidates: tones), "music without a retry?")
        let up = monotonicUs()
        system.networkState(70)
        guard let heard = firstMusic(fromUs: up, timeout: 6) else { return XCTFail("no music after the network came back") }
        let s = Double(heard - up) / 1e6
        print(String(format: "StateChanged(70) → music: %.2f s", s))
        XCTAssertLessThanOrEqual(s, 1.5)
        XCTAssertEqual(statusObject()["network"] as? String, "connected")
    }
}

/// Without logind and NetworkManager on the system bus, or without a system bus at all, the
/// bridge says so once and plays as it does anyway.
final class NoSystemServicesTests: DaemonTestCase {
    func testWithoutLogindOrNetworkManagerItSaysSoOnce() throws {
        XCTAssertTrue(waitUntil(5) { (statusObject()["system_bus"] as? String ?? "").contains("NetworkManager") }, status())
        let s = statusObject()["system_bus"] as? String ?? ""
        XCTAssertTrue(s.contains("logind is not on the system bus") && s.contains("NetworkManager is not on the system bus"), s)
        let log = daemonLog()
        XCTAssertEqual(log.components(separatedBy: "logind is not on the system bus").count - 1, 1, log)
    }

    func testWithoutASystemBusItSaysSoOnce() throws {
        stopDaemon()
        var env = daemonEnvironment
        env["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=\(configDir.path)/no-such-socket"
        try startDaemon(environment: env)
        XCTAssertTrue(waitUntil(10) { (try? playerctl("status")) == "Playing" })
        XCTAssertTrue(waitUntil(5) { (statusObject()["system_bus"] as? String ?? "").hasPrefix("no system bus") }, status())
        let log = daemonLog()
        XCTAssertEqual(log.components(separatedBy: "no system bus").count - 1, 1, log)
    }
}
