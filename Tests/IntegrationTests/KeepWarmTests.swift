import Audio
import Foundation
import Support
import XCTest

/// `keep_warm` (#24): after a pause the stream player keeps its connection, reading and decoding
/// unheard, so that Play within that time is heard without a new connection; after it, Stop, or
/// with 0, the connection closes. Each test plays through a link of the rig's own (a clean plan),
/// whose log says when each connection to Icecast opened and closed, on the tests' monotonic clock.
/// What is heard comes from the null sink's monitor. The Play → first audio times are printed
/// (figures, not bounds: a loaded machine moves them). On PulseAudio all; on PipeWire the resume.
class KeepWarmTestCase: StreamAudioTestCase {
    /// A clean link named for the test; its stream URL and the moment (monotonic s) from which its
    /// log counts.
    func link(_ name: String) throws -> (url: String, since: Double) {
        // A test after one that restarts Icecast starts once the source is back (a 404 is a
        // connection more in the link's log).
        _ = try rig.waitLive()
        let reply = try XCTUnwrap(rig.command(["cmd": "link", "name": name, "plan": [String: Any]()]) as? [String: Any])
        return (try XCTUnwrap(reply["stream_url"] as? String), Double(monotonicUs()) / 1_000_000)
    }

    /// The times (monotonic s) of the link's `event` ("open", "close") since `since`.
    func linkEvents(_ name: String, _ event: String, since: Double) throws -> [Double] {
        try rig.linkEvents(name, event, since: since)
    }

    func now() -> Double { Double(monotonicUs()) / 1_000_000 }

    /// A player through the link `name` with `configure`, played until heard, then paused: the
    /// player, when the link's log counts from, and when it paused (monotonic s).
    func playedThenPaused(_ name: String, log: StatusLog? = nil, _ configure: @escaping (inout StreamConfig) -> Void) throws
        -> (player: StreamPlayer, since: Double, pausedAt: Double)
    {
        let (url, since) = try link(name)
        let p = player(url, configure: configure, log: log)
        _ = try playUntilHeard(p, name)
        let pausedAt = now()
        p.pause()
        return (p, since, pausedAt)
    }

    /// Waits until the link logged `count` closes since `since`; their times (empty if it did not).
    func closes(_ name: String, since: Double, count: Int, within timeout: Double, _ what: String,
                file: StaticString = #filePath, line: UInt = #line) throws -> [Double] {
        var closes: [Double] = []
        let closed = try waitUntil(timeout) { closes = try linkEvents(name, "close", since: since); return closes.count >= count }
        XCTAssertTrue(closed, what, file: file, line: line)
        return closed ? closes : []
    }

    /// Plays until a tone is heard; returns when.
    func playUntilHeard(_ p: StreamPlayer, _ what: String) throws -> Int64 {
        p.play()
        return try XCTUnwrap(recorder.waitForTone(try expectedTone(), candidates: tones, timeout: 8), "\(what): no tone")
    }

    /// Nothing of the rig's tones, nor any signal, from `fromUs` + 0.5 s (the pause's own margin,
    /// as the walks' invariant has it) to now.
    func assertSilent(sincePauseAt fromUs: Int64, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        let start = recorder.index(atTime: fromUs + 500_000)
        let samples = recorder.window(start, recorder.count - start)
        XCTAssertGreaterThan(samples.count, Recorder.rate / 2, "\(what): the recording did not go on", file: file, line: line)
        XCTAssertLessThan(recorder.rms(samples), 0.001, "\(what): heard while paused", file: file, line: line)
    }

    /// Asserts that one of the rig's tones (whichever track it is by then) is heard after Play,
    /// and prints when sound was first heard after `playUs` (the first 10 ms with a signal) as a
    /// figure for BENCHMARKS.md: a figure only, as a recorder starved on a loaded machine can
    /// leave its onset unplaced.
    func firstAudio(after playUs: Int64, _ what: String) throws {
        XCTAssertTrue(waitUntil(8) { recorder.recentTone(ms: 200, candidates: tones) != nil }, "\(what): no tone after Play")
        var i = max(0, recorder.index(atTime: playUs) - Recorder.rate / 10)
        while i < recorder.count, recorder.time(ofSample: i) < playUs { i += 44 }
        while i + 441 <= recorder.count, recorder.rms(recorder.window(i, 441)) < 0.01 { i += 441 }
        guard i + 441 < recorder.count else { return print("\(what): Play → first audio: its onset not found in the recording") }
        let ms = Double(recorder.time(ofSample: i) - playUs) / 1000
        print(String(format: "%@: Play → first audio %.0f ms", what, ms))
    }

    func playWithinKeepWarmResumesOnTheSameConnectionAndNothingIsHeardWhilePaused() throws {
        let name = "keep-warm-resume-\(Self.soundKind)"
        let (url, since) = try link(name)
        let log = StatusLog()
        let p = player(url, configure: { $0.keepWarmSeconds = 30 }, log: log)
        _ = try playUntilHeard(p, "first play")
        // From the connection that plays on: an attempt before it (Icecast's mount not live yet,
        // a 404) is the link's too.
        let opened = try linkEvents(name, "open", since: since).count
        let closed = try linkEvents(name, "close", since: since)
        for round in 1...2 {
            let pausedAt = monotonicUs()
            p.pause()
            XCTAssertEqual(p.currentStatus, .paused)
            let until = try XCTUnwrap(p.keptWarmUntilMs, "round \(round): not kept warm")
            XCTAssertEqual(Double(until - Int(pausedAt / 1000)), 30_000, accuracy: 1000)
            // The connection goes on being read while paused (Icecast would drop a listener whose
            // queue overflows): bytes arrive for the next second and more.
            let bytes = p.currentFigures.bytesReceived
            XCTAssertTrue(waitUntil(5) { p.currentFigures.bytesReceived > bytes + 20_000 }, "round \(round): not read while warm")
            XCTAssertTrue(waitUntil(5) { Double(monotonicUs() - pausedAt) > 1_500_000 })
            assertSilent(sincePauseAt: pausedAt, "round \(round)")
            XCTAssertEqual(p.currentStatus, .paused)
            let playAt = monotonicUs()
            p.play()
            try firstAudio(after: playAt, "warm, round \(round)")
            XCTAssertTrue(waitUntil(3) { p.currentStatus == .playing }, "\(p.currentStatus)")
            // And it goes on: 2 s on, music still (no stall after what was held).
            XCTAssertTrue(waitUntil(5) { Double(monotonicUs() - playAt) > 2_000_000 })
            XCTAssertNotNil(recorder.recentTone(ms: 300, candidates: tones), "round \(round): silent 2 s after the resume")
            XCTAssertNil(p.keptWarmUntilMs)
        }
        // A Play soon after the pause: what the pause flushed unheard is held too, so it starts at once.
        p.pause()
        usleep(150_000)  // the pause's length, not a wait for an event
        let soonAt = monotonicUs()
        p.play()
        try firstAudio(after: soonAt, "warm, 150 ms after the pause")
        XCTAssertTrue(waitUntil(3) { p.currentStatus == .playing }, "\(p.currentStatus)")
        XCTAssertEqual(try linkEvents(name, "open", since: since).count, opened, "a new connection for a warm Play")
        XCTAssertEqual(try linkEvents(name, "close", since: since), closed, "the connection closed")
        // Each resume said .buffering, then .playing, after the .paused of its pause.
        let tail = log.all.drop { $0 != .paused }
        XCTAssertEqual(Array(tail), Array(repeating: [StreamStatus.paused, .buffering, .playing], count: 3).flatMap { $0 }, "\(log.all)")
        // The heard delay is measured again after the resume (the sink's buffer, the held audio).
        XCTAssertTrue(waitUntil(5) { p.currentFigures.localDelayMs > 0 }, "no heard delay after a warm resume")
        print("heard delay after a warm resume: \(p.currentFigures.localDelayMs) ms")
    }
}

final class KeepWarmTests: KeepWarmTestCase {
    func testPlayWithinKeepWarmResumesOnTheSameConnectionAndNothingIsHeardWhilePaused() throws {
        try playWithinKeepWarmResumesOnTheSameConnectionAndNothingIsHeardWhilePaused()
    }

    func testAPauseLongerThanKeepWarmClosesTheConnectionAndPlayConnectsAgain() throws {
        let name = "keep-warm-expires"
        let (p, since, pausedAt) = try playedThenPaused(name) { $0.keepWarmSeconds = 2 }
        XCTAssertNotNil(p.keptWarmUntilMs)
        let closedAfter = try XCTUnwrap(try closes(name, since: since, count: 1, within: 10, "not closed after keep_warm").first) - pausedAt
        print(String(format: "keep_warm = 2: closed %.2f s after the pause", closedAfter))
        XCTAssertGreaterThanOrEqual(closedAfter, 2.0, "closed before keep_warm was over")
        XCTAssertNil(p.keptWarmUntilMs)
        XCTAssertEqual(p.currentStatus, .paused)
        assertSilent(sincePauseAt: Int64(pausedAt * 1_000_000), "kept, then closed")
        let playAt = monotonicUs()
        p.play()
        try firstAudio(after: playAt, "after keep_warm, a new connection")
        XCTAssertEqual(try linkEvents(name, "open", since: since).count, 2, "Play after keep_warm connects again")
    }

    func testKeepWarmZeroClosesAtThePauseAndStopClosesAWarmConnection() throws {
        let name = "keep-warm-off"
        let (cold, since, pausedAt) = try playedThenPaused(name) { $0.keepWarmSeconds = 0 }
        XCTAssertNil(cold.keptWarmUntilMs)
        let closedAtPause = try XCTUnwrap(try closes(name, since: since, count: 1, within: 5, "keep_warm = 0: not closed").first)
        print(String(format: "keep_warm = 0: closed %.3f s after the pause", closedAtPause - pausedAt))
        let playAt = monotonicUs()
        cold.play()
        try firstAudio(after: playAt, "keep_warm = 0, a new connection")
        XCTAssertEqual(try linkEvents(name, "open", since: since).count, 2)
        cold.stop()
        _ = try closes(name, since: since, count: 2, within: 5, "Stop did not close")

        // Kept warm, then Stop: closed at once, not after keep_warm.
        let warm = player(try link(name).url, configure: { $0.keepWarmSeconds = 30 })
        _ = try playUntilHeard(warm, "keep_warm = 30")
        let warmPausedAt = now()
        warm.pause()
        XCTAssertNotNil(warm.keptWarmUntilMs)
        warm.stop()
        XCTAssertEqual(warm.currentStatus, .stopped)
        XCTAssertNil(warm.keptWarmUntilMs)
        let closedAtStop = try XCTUnwrap(try closes(name, since: since, count: 3, within: 5, "Stop did not close a warm one").last)
        print(String(format: "kept warm, Stop: closed %.3f s after the pause", closedAtStop - warmPausedAt))
        usleep(1_200_000)  // a window of silence to listen to, not a wait for an event
        assertSilent(sincePauseAt: Int64(warmPausedAt * 1_000_000), "paused, then stopped")
    }

    /// Icecast gone while the connection is kept: it ends quietly (still Paused, no reconnect
    /// while nobody listens here), and Play connects again once Icecast is back. (The link keeps
    /// its side of the listener's socket open when Icecast dies, as a host that vanished would:
    /// the stall timer, 3 s here, is what ends the connection.)
    func testIcecastGoneWhileKeptWarmEndsItQuietlyAndPlayConnectsAgain() throws {
        let name = "keep-warm-outage"
        let log = StatusLog()
        let (p, since, _) = try playedThenPaused(name, log: log) { $0.keepWarmSeconds = 30; $0.stallSeconds = 3 }
        XCTAssertNotNil(p.keptWarmUntilMs)
        let before = log.all.count
        try rig.stop("icecast", signal: "KILL")
        var restarted = false
        defer { if !restarted { _ = try? rig.start("icecast") } }
        _ = try closes(name, since: since, count: 1, within: 10, "the kept connection did not end with Icecast")
        XCTAssertTrue(waitUntil(10) { p.keptWarmUntilMs == nil }, "still said to be kept warm")
        usleep(1_000_000)  // a window for a reconnect or a status that must not come
        XCTAssertEqual(p.currentStatus, .paused)
        XCTAssertEqual(log.all.count, before, "a status while paused: \(log.all.suffix(3))")
        XCTAssertEqual(try linkEvents(name, "open", since: since).count, 1, "reconnected while paused")
        try rig.start("icecast")
        restarted = true
        _ = try rig.waitLive()
        _ = try playUntilHeard(p, "after Icecast came back")
        XCTAssertEqual(try linkEvents(name, "open", since: since).count, 2)
    }

    /// A reload that changes only `keep_warm` reconnects nothing: while playing, the connection
    /// goes on; while kept warm, the new time counts from the pause. Sleep (`endWarm`) closes it.
    func testANewKeepWarmAppliesWithoutReconnectingAndEndWarmCloses() throws {
        let name = "keep-warm-reload"
        let (url, since) = try link(name)
        let p = player(url, configure: { $0.keepWarmSeconds = 30 })
        _ = try playUntilHeard(p, "first play")
        var c = p.config
        c.keepWarmSeconds = 60
        p.update(config: c)
        usleep(500_000)  // a window for a reconnect that must not come
        XCTAssertEqual(p.currentStatus, .playing)
        XCTAssertNotNil(recorder.waitForTone(try expectedTone(), candidates: tones, timeout: 3))
        let pausedAt = now()
        p.pause()
        c.keepWarmSeconds = 1
        p.update(config: c)
        let closed = try XCTUnwrap(try closes(name, since: since, count: 1, within: 8, "a shorter keep_warm did not close").first)
        print(String(format: "keep_warm 30 → 1 while paused: closed %.2f s after the pause", closed - pausedAt))
        XCTAssertGreaterThanOrEqual(closed - pausedAt, 1.0)
        XCTAssertEqual(try linkEvents(name, "open", since: since).count, 1, "the reload reconnected")

        // Sleep: the bridge ends a warm connection (`endWarm`); Play then connects again.
        c.keepWarmSeconds = 30
        p.update(config: c)
        _ = try playUntilHeard(p, "after the reload")
        p.pause()
        XCTAssertNotNil(p.keptWarmUntilMs)
        p.endWarm()
        XCTAssertNil(p.keptWarmUntilMs)
        XCTAssertEqual(p.currentStatus, .paused)
        _ = try closes(name, since: since, count: 2, within: 5, "endWarm did not close")
        _ = try playUntilHeard(p, "after endWarm")
        XCTAssertEqual(try linkEvents(name, "open", since: since).count, 3)
    }
}

final class PipeWireKeepWarmTests: KeepWarmTestCase {
    override class var soundKind: String { "pipewire" }

    func testPlayWithinKeepWarmResumesOnTheSameConnectionAndNothingIsHeardWhilePaused() throws {
        try playWithinKeepWarmResumesOnTheSameConnectionAndNothingIsHeardWhilePaused()
    }
}
