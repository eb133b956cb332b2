import Foundation
import Support
import XCTest

/// Issue #17: the sound output the bridge plays on goes away while it plays (a headset
/// unplugged). Here a null sink of its own is unloaded under the bridge; PulseAudio then moves
/// the stream to the default sink, the rig's, which is recorded as "the other output".
class OutputLostTestCase: DaemonTestCase {
    var lostSink = "groove_lost_\(getpid())"
    var module: String? = nil
    var extraArguments: [String] { [] }

    override var defaultArguments: [String] {
        ["--rpc-url", rig.info.groove_rpc_url, "--ws-url", rig.info.groove_ws_url,
         "--stream-url", rig.info.stream_url, "--sink", lostSink, "--autoplay"] + extraArguments
    }

    override func setUpWithError() throws {
        rig = try Rig.get()
        let r = try runCommand(["pactl", "load-module", "module-null-sink", "sink_name=\(lostSink)"], env: rig.clientEnvironment)
        XCTAssertEqual(r.status, 0, r.err)
        module = r.out.trimmingCharacters(in: .whitespacesAndNewlines)
        try super.setUpWithError()
    }

    override func tearDown() {
        super.tearDown()
        unloadSink()
    }

    func unloadSink() {
        guard let m = module, let rig else { return }
        module = nil
        _ = try? runCommand(["pactl", "unload-module", m], env: rig.clientEnvironment)
    }

    /// Plays on the bridge's own sink, then unloads it; returns (the recording of the other
    /// output, when the sink went).
    func unloadWhilePlaying() throws -> (Recorder, Int64) {
        let tones = rig.info.tracks.map(\.freq)
        let own = try Recorder(rig: rig, source: "\(lostSink).monitor")
        defer { own.stop() }
        XCTAssertNotNil(own.waitForTone(try expectedTone(), candidates: tones, timeout: 8), "no tone on the bridge's own sink")
        let other = try Recorder(rig: rig)
        recorder = other
        // parec takes a while to start on a busy machine: a recorder that has heard nothing yet
        // would both pass the check below and make the music's return look late.
        XCTAssertTrue(waitUntil(5) { other.count >= Recorder.rate * 3 / 10 }, "the other output's recorder delivered nothing")
        XCTAssertNil(other.recentTone(ms: 200, candidates: tones), "the other output played before the unload")
        let t0 = monotonicUs()
        unloadSink()
        return (other, t0)
    }
}

final class OutputLostPauseTests: OutputLostTestCase {
    func testUnpluggedOutputPausesHereWithAtMostABlockPlayedElsewhere() throws {
        let (other, t0) = try unloadWhilePlaying()
        var pausedAt: Int64? = nil
        _ = waitUntil(3) {
            if (try? playerctl("status")) == "Paused" { pausedAt = monotonicUs() }
            return pausedAt != nil
        }
        let ms = try XCTUnwrap(pausedAt.map { Double($0 - t0) / 1000 }, "not Paused after the output went away")
        print("output lost → Paused published: \(ms) ms")
        XCTAssertLessThanOrEqual(ms, 500)
        usleep(1_000_000)
        // Whatever reached the other output after the unload, in 10 ms windows. PulseAudio moves
        // the stream there itself and only then tells the bridge, which corks at once, so that
        // sink's first 10 ms block can carry the music (the tally is in BENCHMARKS.md). Only
        // PA_STREAM_DONT_MOVE would make it nothing, and it would stop desktop mixers from moving
        // the stream at all.
        var loudest = 0.0, windows = 0
        var loud: [Double] = []  // when each loud window began, ms after the unload
        var i = other.index(atTime: t0)
        while i + 441 <= other.count {
            let r = other.rms(other.window(i, 441))
            loudest = max(loudest, r)
            if r >= 0.001 { loud.append(Double(other.time(ofSample: i) - t0) / 1000) }
            windows += 1
            i += 441
        }
        print("output lost: \(loud.count) × 10 ms of sound on the other output (at \(loud) ms), loudest \(loudest) (the tone plays at ~0.35)")
        XCTAssertGreaterThanOrEqual(windows, 80, "the other output's recorder stopped delivering")
        XCTAssertLessThanOrEqual(loud.count, 2, "more than a block of music played on the other output")
        XCTAssertTrue(loud.allSatisfy { $0 <= 100 }, "music on the other output after the pause: \(loud) ms")
        XCTAssertEqual(try rig.rpc("core.playback.get_state") as? String, "playing", "the house was paused")
        let s = status()
        XCTAssertTrue(s.contains("paused: the sound output went away"), s)
        XCTAssertTrue(daemonLog().contains("the sound output went away"))
    }
}

final class OutputLostFollowTests: OutputLostTestCase {
    override var extraArguments: [String] { ["--on-output-lost", "follow"] }

    func testFollowKeepsPlayingWherePulseAudioMovedIt() throws {
        let (other, t0) = try unloadWhilePlaying()
        let tones = rig.info.tracks.map(\.freq)
        // Any of the rig's tones (the house may change track meanwhile); the moment the newest
        // 200 ms first held one is an upper bound of when the music came back.
        var heard: Int64? = nil
        _ = waitUntil(3) {
            if other.recentTone(ms: 200, candidates: tones) != nil { heard = monotonicUs() }
            return heard != nil
        }
        let ms = try XCTUnwrap(heard.map { Double($0 - t0) / 1000 }, "nothing on the other output")
        print("output lost, follow → heard on the other output: \(ms) ms")
        XCTAssertLessThanOrEqual(ms, 500)
        XCTAssertEqual(try playerctl("status"), "Playing")
        XCTAssertTrue(status().contains("\"stream\":\"playing\""), status())
    }
}
