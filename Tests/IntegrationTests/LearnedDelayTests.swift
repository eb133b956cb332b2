import DBus
import Foundation
import Mopidy
import MPRIS
import Support
import Synchronization
import XCTest

/// Every Metadata title the bridge publishes on the rig's bus, with when it arrived (monotonic µs).
final class TitleSignals: @unchecked Sendable {
    let titles = Mutex<[(us: Int64, title: String)]>([])
    private let stopped = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)

    init(busAddress: String) throws {
        let watcher = try DBusConnection(address: busAddress)
        try watcher.addMatch("type='signal',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',path='/org/mpris/MediaPlayer2'")
        let reading = DispatchSemaphore(value: 0)
        Thread.detachNewThread { [self] in
            reading.signal()
            while !stopped.load(ordering: .relaxed) {
                guard let sig = watcher.nextSignal(timeoutMs: 200), sig.args.count == 3,
                      case .dict(_, _, let changed) = sig.args[1] else { continue }
                for (k, v) in changed where k.stringValue == "Metadata" {
                    guard case .variant(.dict(_, _, let meta)) = v else { continue }
                    for (mk, mv) in meta where mk.stringValue == "xesam:title" {
                        if case .variant(.string(let t)) = mv { titles.withLock { $0.append((sig.receivedUs, t)) } }
                    }
                }
            }
            done.signal()
        }
        // The match is in place (addMatch waits for the bus), and the thread that stamps each
        // signal's arrival is reading before the caller goes on.
        guard reading.wait(timeout: .now() + 10) == .success else { throw Rig.RigError(message: "the signal reader did not start") }
    }

    /// The first signal of `title` from `fromUs` on.
    func first(_ title: String, fromUs: Int64) -> Int64? {
        titles.withLock { $0.first { $0.title == title && $0.us >= fromUs }?.us }
    }

    func stop() {
        stopped.store(true, ordering: .relaxed)
        done.wait()
    }
}

extension DaemonTestCase {
    /// (clear boundaries, track changes looked at), from `server_delay_learned_from`.
    func learnedFrom() -> (clear: Int, looked: Int)? {
        guard let s = statusObject()["server_delay_learned_from"] as? String else { return nil }
        let n = s.split(separator: " ").compactMap { Int($0) }
        return n.count == 2 ? (n[0], n[1]) : nil
    }

    /// The bridge again with debug logging, its heard-now lines read as they come (what it found
    /// at each change), after `whileStopped`. Returns what stops it and prints them.
    func restartLearningBridge(whileStopped: () throws -> Void = {}) throws -> () -> Void {
        stopDaemon()
        XCTAssertTrue(waitUntil(3) { client.owner(of: MPRISService.busName) == nil })
        try whileStopped()
        try startDaemon(["--verbose"])
        XCTAssertTrue(waitUntil(10) { (try? playerctl("status")) == "Playing" }, "bridge did not come up playing")
        return { [self] in
            print(daemonLog().split(separator: "\n").filter { $0.contains("heard-now") }.joined(separator: "\n"))
        }
    }

    /// Issue #27: with nothing set, on a server `encoderDelayMs` slower than the rig's own, the
    /// title changes within 250 ms of the new track being heard from the third clear change on.
    /// The bridge starts from `server_delay_ms`'s default and learns the rest from the music.
    /// The changes alternate Mopidy's next and a track running out after a seek near its end;
    /// each waits for the bridge's answer on the previous one (in `status`), not for a time.
    func titlesFollowTheMusicWithNoSetting(encoderDelayMs: Int) throws {
        // The encoder restarted before the bridge starts: its first connection is to this server.
        let finish = try restartLearningBridge { try rig.command(["cmd": "encoder_delay", "ms": encoderDelayMs]) }
        defer { finish() }
        defer { _ = try? rig.command(["cmd": "encoder_delay", "ms": 0]) }
        XCTAssertTrue(waitUntil(30) { status().contains("\"stream\":\"playing\"") }, "the bridge did not join the encoder's stream: \(status())")
        XCTAssertEqual(statusObject()["server_delay_ms"] as? Int, 400, "not the default to start from")
        let (rec, tones, titles, events) = try listen(toneTimeout: 8)
        XCTAssertTrue(waitUntil(5) { learnedFrom() != nil }, "no server_delay_learned_from in \(status())")

        /// The stream's own part of the heard delay (the sound output's, less the server's).
        func streamPart(_ o: [String: Any]) -> Int? {
            guard let h = o["heard_delay_ms"] as? Int, let s = o["server_delay_ms"] as? Int else { return nil }
            return h - s
        }
        var changes: [(us: Int64, title: String, learnedBefore: Int, delayBefore: Int, streamBefore: Int?)] = []
        for i in 0..<8 {
            let title = try rig.currentTitle() ?? ""
            let learned = try XCTUnwrap(learnedFrom())
            let before = statusObject()
            let delay = before["server_delay_ms"] as? Int ?? -1
            let begin = monotonicUs()
            if i % 2 == 0 {
                try rig.rpc("core.playback.next")
            } else {
                // Far enough from the end that the seek's own gap in the audio is not near the change.
                try rig.rpc("core.playback.seek", ["time_position": rig.info.track_seconds * 1000 - 5000])
            }
            XCTAssertTrue(waitUntil(9) { (try? rig.currentTitle()) != title }, "change \(i) did not happen")
            func started() -> (us: Int64, event: MopidyEvent)? {
                events.list.withLock { l in
                    l.last { e in
                        guard e.us >= begin, case .trackPlaybackStarted = e.event else { return false }
                        return true
                    }
                }
            }
            XCTAssertTrue(waitUntil(5) { started() != nil }, "change \(i): no track_playback_started")
            guard let start = started(), case .trackPlaybackStarted(let tl) = start.event else {
                XCTFail("change \(i): no track_playback_started")
                continue
            }
            changes.append((start.us, tl.track.name ?? "", learned.clear, delay, streamPart(before)))
            // The bridge looked for this change in the music and answered: the next may come.
            XCTAssertTrue(waitUntil(15) { (learnedFrom()?.looked ?? 0) > learned.looked }, "change \(i) was not looked for")
            XCTAssertTrue(waitUntil(5) { titles.first(tl.track.name ?? "", fromUs: start.us - 100_000) != nil },
                          "change \(i): no title signalled")
        }
        // Each change's stream part once it was heard: the next change's before, or now.
        let streamAfter = changes.dropFirst().map(\.streamBefore) + [streamPart(statusObject())]
        var report: [String] = []
        var judged = 0
        var outliers: [Int] = []
        for (c, after) in zip(changes, streamAfter) {
            guard let freq = rig.track(titled: c.title)?.freq else { XCTFail("unknown title \(c.title)"); continue }
            let heard = rec.firstHeard(freq, candidates: tones, fromUs: c.us)
            let signal = titles.first(c.title, fromUs: c.us - 100_000)
            guard let heard, let signal else {
                XCTFail("\(c.title): heard \(String(describing: heard)), signalled \(String(describing: signal))")
                continue
            }
            let off = Int((signal - heard) / 1000)
            // How much the stream's delay grew over the change: its sound output ran dry (a stall
            // of the server or of this loaded machine) after the title was timed.
            let grown = max(0, (after ?? 0) - (c.streamBefore ?? 0))
            report.append("\(off) (delay \(c.delayBefore), from \(c.learnedBefore)\(grown > 50 ? ", stream +\(grown)" : ""))")
            if c.learnedBefore >= 2 {
                judged += 1
                if off > 250 || off < -250 - grown { outliers.append(off) }
                XCTAssertLessThanOrEqual(abs(off), 1000, "the title \(off) ms from the music, learned from \(c.learnedBefore)")
            }
        }
        let final = learnedFrom()
        print("heard-now learned (encoder +\(encoderDelayMs) ms, \(sound.kind)): title − heard per change, ms: \(report); "
              + "server_delay_ms \(statusObject()["server_delay_ms"] ?? "?"), learned from \(String(describing: final))")
        XCTAssertGreaterThanOrEqual(judged, 5, "fewer than 5 changes came after two clear ones: \(report)")
        // No title is more than 250 ms late. One comes early by as much as the stream's delay grew
        // after it was timed (a stall no measure foresees: HeardDelayUnderrunTests checks the
        // measure through one), which the report shows as "stream +N".
        XCTAssertEqual(outliers, [], "titles more than 250 ms from the music: \(outliers) in \(report)")
        if encoderDelayMs > 0 {
            XCTAssertNotNil(statusObject()["server_delay_changed"] as? String, "status says not when it changed: \(status())")
        }
    }
}

extension DaemonTestCase {
    /// Issue #27 on music-like tracks (the rig's music set): changes with no boundary in the audio
    /// (a chord split across two files, a crossfade) never move the learned delay, and clear
    /// ones (noise to a chord, a tone to noise) are always found.
    /// Each change is a track running out after a seek 5 s before its end, and waits for the
    /// bridge's answer on it.
    func ambiguousChangesLeaveTheDelayAndClearOnesTeachIt() throws {
        let finish = try restartLearningBridge()
        defer { finish() }
        try rig.command(["cmd": "queue", "set": "music"])
        defer { _ = try? rig.command(["cmd": "queue"]) }
        let titles = try XCTUnwrap(rig.musicTitles, "the rig has no music set")
        XCTAssertTrue(waitUntil(10) { (try? rig.currentTitle()) == titles.first }, "the music set does not play")
        var outcome: [String] = []
        var ambiguousMoves: [Int] = []
        var clear = 0, clearFound = 0
        for _ in 0..<(titles.count + 2) {
            let from = try rig.currentTitle() ?? ""
            let learned = try XCTUnwrap(learnedFrom())
            let delay = statusObject()["server_delay_ms"] as? Int ?? -1
            try rig.rpc("core.playback.seek", ["time_position": rig.info.track_seconds * 1000 - 5000])
            XCTAssertTrue(waitUntil(9) { (try? rig.currentTitle()) != from }, "\(from) did not end")
            let to = try rig.currentTitle() ?? ""
            XCTAssertTrue(waitUntil(15) { (learnedFrom()?.looked ?? 0) > learned.looked }, "\(from) → \(to) was not looked for")
            let now = try XCTUnwrap(learnedFrom())
            let after = statusObject()["server_delay_ms"] as? Int ?? -1
            let found = now.clear > learned.clear
            outcome.append("\(from) → \(to): \(found ? "found" : "none"), \(delay) → \(after) ms")
            switch (from, to) {
            case ("Gapless Part 1", "Gapless Part 2"), ("Crossfade Out", "Crossfade In"):
                ambiguousMoves.append(after - delay)
            case ("Noise Wash", "Chord Field"), ("Late Start", "Noise Wash"):
                clear += 1
                if found { clearFound += 1 }
            default:
                break
            }
        }
        print("heard-now on the music set: \(outcome)")
        XCTAssertGreaterThanOrEqual(ambiguousMoves.count, 2, "\(outcome)")
        XCTAssertLessThan(ambiguousMoves.map(abs).reduce(0, +), 50, "ambiguous changes moved the delay: \(outcome)")
        XCTAssertGreaterThanOrEqual(clear, 2, "\(outcome)")
        XCTAssertEqual(clearFound, clear, "clear changes not found: \(outcome)")
    }
}

/// The bridge with nothing set, on PulseAudio, against servers of three delays.
final class LearnedDelayTests: DaemonTestCase {
    func testTitlesFollowTheMusicOnTheRigsOwnServer() throws { try titlesFollowTheMusicWithNoSetting(encoderDelayMs: 0) }
    func testTitlesFollowTheMusicOnAServer800msSlower() throws { try titlesFollowTheMusicWithNoSetting(encoderDelayMs: 800) }
    func testTitlesFollowTheMusicOnAServer1500msSlower() throws { try titlesFollowTheMusicWithNoSetting(encoderDelayMs: 1500) }
    func testAmbiguousChangesLeaveTheDelayAndClearOnesTeachIt() throws { try ambiguousChangesLeaveTheDelayAndClearOnesTeachIt() }
}

/// The same on PipeWire, on the slower server (the music set's test is about the detector, not
/// the sound server). The three delays on PipeWire, measured, are in BENCHMARKS.md; CI runs this
/// one to keep the suite near 20 minutes.
final class PipeWireLearnedDelayTests: DaemonTestCase {
    override class var soundKind: String { "pipewire" }

    func testTitlesFollowTheMusicOnAServer800msSlower() throws { try titlesFollowTheMusicWithNoSetting(encoderDelayMs: 800) }
}

extension Rig {
    /// The titles of the rig's music set, in its order (scripts/rig/music.py).
    var musicTitles: [String]? {
        guard let info = try? command(["cmd": "info"]) as? [String: Any], let music = info["music"] as? [[String: Any]] else { return nil }
        return music.compactMap { $0["title"] as? String }
    }
}
