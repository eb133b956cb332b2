import Audio
import Foundation
import Support
import Synchronization
import XCTest

final class StatusLog: StreamPlayerDelegate {
    private let list = Mutex<[StreamStatus]>([])
    func streamPlayer(statusChanged status: StreamStatus, sequence: Int) { list.withLock { $0.append(status) } }
    var all: [StreamStatus] { list.withLock { $0 } }
}

/// The stream player against the rig's real Icecast, heard through the null sink's monitor.
final class StreamPlayerTests: XCTestCase {
    var rig: Rig!
    var recorder: Recorder!
    var players: [StreamPlayer] = []
    var tones: [Int] { rig.info.tracks.map(\.freq) }

    override func setUpWithError() throws {
        rig = try Rig.get()
        recorder = try Recorder(rig: rig)
    }

    override func tearDown() {
        for p in players { p.stop() }
        players = []
        recorder?.stop()
        // Let the sink's stream close before the next test records.
        usleep(300_000)
    }

    func player(_ url: String, password: String? = nil, configure: (inout StreamConfig) -> Void = { _ in },
                log: StatusLog? = nil) -> StreamPlayer {
        var c = StreamConfig(url: url, user: "listener", password: password ?? rig.info.password, sink: rig.info.sink)
        c.pulseServer = rig.info.pulse_server
        configure(&c)
        let p = StreamPlayer(config: c, delegate: log)
        players.append(p)
        return p
    }

    func expectedTone() throws -> Int {
        let title = try rig.currentTitle()
        return try XCTUnwrap(rig.track(titled: title ?? "")?.freq, "Mopidy plays \(String(describing: title))")
    }

    func testHearsTheTrackMopidyPlaysAndFollowsNext() throws {
        let p = player(rig.info.stream_url)
        p.play()
        XCTAssertTrue(waitUntil(5) { p.currentStatus == .playing }, "status \(p.currentStatus)")
        XCTAssertNotNil(recorder.waitForTone(try expectedTone(), candidates: tones, timeout: 3), "wrong or no tone")
        try rig.rpc("core.playback.next")
        let next = try expectedTone()
        XCTAssertNotNil(recorder.waitForTone(next, candidates: tones, timeout: 3), "tone did not change to \(next) Hz")
        let f = p.currentFigures
        XCTAssertEqual(f.format, AudioFormat(sampleRate: 44100, channels: 2, bitsPerSample: 16))
        // At least the join's 0.5 s: the rest of Icecast's burst is skipped undecoded.
        XCTAssertGreaterThanOrEqual(f.samplesDecoded, 44100 / 2)
        XCTAssertGreaterThan(f.bytesReceived, 10_000)
        print("join: skipped \(f.skippedAtJoinMs) ms of Icecast's burst; sound server buffer \(f.bufferedMs) ms; delay \(f.localDelayMs) ms")
    }

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

    func testPauseSilencesWithin200msAndResumeComesBack() throws {
        let p = player(rig.info.stream_url)
        p.play()
        XCTAssertNotNil(recorder.waitForTone(try expectedTone(), candidates: tones, timeout: 6))
        let t0 = monotonicUs()
        p.pause()
        XCTAssertTrue(waitUntil(2) { p.currentStatus == .paused })
        usleep(600_000)
        // Find when the recording went silent: the first 10 ms window after t0 with no signal.
        let start = recorder.index(atTime: t0)
        var silentAt: Int64? = nil
        var i = start
        while i + 441 < recorder.count {
            if recorder.rms(recorder.window(i, 441)) < 0.001 { silentAt = recorder.time(ofSample: i); break }
            i += 441
        }
        let silence = try XCTUnwrap(silentAt, "never went silent after pause")
        let ms = Double(silence - t0) / 1000
        print("pause → silence: \(ms) ms")
        XCTAssertLessThanOrEqual(ms, 200)
        XCTAssertLessThan(recorder.rms(recorder.window(recorder.count - 4410, 4410)), 0.001, "not silent after pause")
        p.play()
        XCTAssertNotNil(recorder.waitForTone(try expectedTone(), candidates: tones, timeout: 5), "no tone after resume")
    }

    func testWrongPasswordIsReportedAndRetriedSlowly() throws {
        let log = StatusLog()
        let p = player(rig.info.stream_url, password: "wrong-\(UUID().uuidString.prefix(8))", log: log)
        p.play()
        XCTAssertTrue(waitUntil(5) { if case .failed = p.currentStatus { return true }; return false })
        guard case .failed(let reason, let retry) = p.currentStatus else { return XCTFail("\(p.currentStatus)") }
        XCTAssertTrue(reason.contains("refused the password for user 'listener'"), reason)
        XCTAssertTrue(reason.contains("HTTP 401"), reason)
        XCTAssertFalse(reason.contains("wrong-"), "password in the message")
        XCTAssertGreaterThanOrEqual(retry, 30_000)
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
        usleep(1_500_000)
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
        usleep(2_000_000)
        try rig.signal("icecast", "CONT")
        contd = true
        XCTAssertNotNil(recorder.waitForTone(try expectedTone(), candidates: tones, timeout: 15), "no audio after SIGCONT")
    }
}
