import Audio
import Foundation
import Support
import Synchronization
import Net
import XCTest

final class StatusLog: StreamPlayerDelegate {
    private let list = Mutex<[StreamStatus]>([])
    func streamPlayer(_ event: StreamEvent) {
        if case .status(let status, _) = event { list.withLock { $0.append(status) } }
    }
    var all: [StreamStatus] { list.withLock { $0 } }
}

/// The stream player against the rig's real Icecast, heard through the null sink's monitor.
/// (The scaffolding and the tests run on each sound server are in SoundServerTests.swift.)
final class StreamPlayerTests: StreamAudioTestCase {
    func testHearsTheTrackMopidyPlaysAndFollowsNext() throws { try hearsTheTrackMopidyPlaysAndFollowsNext() }

    func testNativeFLACJoinedMidStreamAndThroughNginx() throws {
        for url in [rig.info.native_stream_url, rig.info.nginx_stream_url] {
            let p = player(url)
            p.play()
            XCTAssertTrue(waitUntil(8) { p.currentStatus == .playing }, "\(url): \(p.currentStatus)")
            XCTAssertNotNil(recorder.waitForTone(try expectedTone(), candidates: tones, timeout: 3), "\(url): wrong or no tone")
            p.stop()
            XCTAssertTrue(waitUntil(2) { p.currentStatus == .stopped })
        }
    }

    func testPauseSilencesWithin200msAndResumeComesBack() throws { try pauseSilencesWithin200msAndResumeComesBack() }

    func testWrongPasswordIsReportedAndRetriedSlowly() throws {
        let log = StatusLog()
        let p = player(rig.info.stream_url, password: "wrong-\(UUID().uuidString.prefix(8))", log: log)
        p.play()
        XCTAssertTrue(waitUntil(5) { if case .failed = p.currentStatus { return true }; return false })
        guard case .failed(let failure, let retry) = p.currentStatus else { return XCTFail("\(p.currentStatus)") }
        XCTAssertEqual(failure.kind, .unauthorized(httpStatus: 401), "the kind that asks the user to sign in again")
        let reason = failure.message
        XCTAssertTrue(reason.contains("refused the password for user 'listener'"), reason)
        XCTAssertTrue(reason.contains("HTTP 401"), reason)
        XCTAssertFalse(reason.contains("wrong-"), "password in the message")
        XCTAssertGreaterThanOrEqual(retry, 30_000)
        // A window, not a wait for an event: the next attempt is due in 30 s, and a retry loop
        // would make dozens in these 3 s.
        usleep(3_000_000)
        XCTAssertEqual(p.currentFigures.reconnects, 1, "retried in a loop")
        XCTAssertNil(recorder.recentTone(ms: 1000, candidates: tones), "audio despite a wrong password")
    }

    func testIcecastKilledAndRestartedPlaysAgainSoon() throws {
        let p = player(rig.info.stream_url)
        p.play()
        XCTAssertNotNil(recorder.waitForTone(try expectedTone(), candidates: tones, timeout: 6))
        try rig.stop("icecast", signal: "KILL")
        XCTAssertTrue(waitUntil(5) { if case .reconnecting = p.currentStatus { return true }; return false }, "\(p.currentStatus)")
        usleep(1_500_000)  // the outage's length, not a wait for an event
        try rig.start("icecast")
        let back = monotonicUs()
        let heard = recorder.waitForTone(try expectedTone(), candidates: tones, timeout: 10)
        XCTAssertNotNil(heard, "no audio after Icecast came back")
        if let heard {
            let s = Double(heard - back) / 1_000_000
            print("Icecast back → right tone heard: \(s) s")
            XCTAssertLessThanOrEqual(s, 3.0)
        }
    }

    func testSoundServerRestartedUnderIt() throws {
        let log = StatusLog()
        let p = player(rig.info.stream_url, log: log)
        p.play()
        XCTAssertNotNil(recorder.waitForTone(try expectedTone(), candidates: tones, timeout: 6))
        recorder.stop()
        try rig.stop("pulse", signal: "KILL")
        XCTAssertTrue(waitUntil(5) { if case .reconnecting = p.currentStatus { return true }; return false },
                      "sound server loss not noticed: \(p.currentStatus)")
        try rig.start("pulse")
        recorder = try Recorder(rig: rig)
        XCTAssertNotNil(recorder.waitForTone(try expectedTone(), candidates: tones, timeout: 15),
                        "no audio on the new sound server: \(log.all)")
    }

    func testStallIsDetectedAndRecovered() throws {
        let log = StatusLog()
        let p = player(rig.info.stream_url, configure: { $0.stallSeconds = 3 }, log: log)
        p.play()
        defer { print("statuses: \(log.all)") }
        XCTAssertNotNil(recorder.waitForTone(try expectedTone(), candidates: tones, timeout: 6))
        try rig.signal("icecast", "STOP")
        var contd = false
        defer { if !contd { try? rig.signal("icecast", "CONT") } }
        XCTAssertTrue(waitUntil(8) {
            if case .reconnecting(_, let r) = p.currentStatus { return r.contains("no data") }
            return false
        }, "stall not detected: \(p.currentStatus)")
        usleep(2_000_000)  // the stall's length, not a wait for an event
        try rig.signal("icecast", "CONT")
        contd = true
        XCTAssertNotNil(recorder.waitForTone(try expectedTone(), candidates: tones, timeout: 15), "no audio after SIGCONT")
    }
}
