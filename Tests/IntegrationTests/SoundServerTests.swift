import Audio
import DBus
import Foundation
import Mopidy
import MPRIS
import Support
import Synchronization
import Net
import XCTest

// The audio tests, on each sound server desktops run: PulseAudio (the rig's own; StreamPlayerTests
// and BridgeTests) and PipeWire with WirePlumber and pipewire-pulse (started by the rig beside it
// on first use, with its own runtime folder and null sink: the classes at the end). Each scenario
// is written once, here, and run by a one-line test in each class.

/// The stream player against the rig's real Icecast, heard through the monitor of a null sink of
/// `soundKind`'s sound server: the scaffolding of StreamPlayerTests and of the tests run on each
/// sound server.
class StreamAudioTestCase: XCTestCase {
    class var soundKind: String { "pulseaudio" }
    var rig: Rig!
    var sound: Rig.Sound!
    var recorder: Recorder!
    var players: [StreamPlayer] = []
    var tones: [Int] { rig.info.tracks.map(\.freq) }

    override func setUpWithError() throws {
        rig = try Rig.get()
        sound = try rig.sound(Self.soundKind)
        recorder = try Recorder(rig: rig, sound: sound)
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
        c.pulseServer = sound.pulse_server
        configure(&c)
        let p = StreamPlayer(config: c, delegate: log)
        players.append(p)
        return p
    }

    func expectedTone() throws -> Int {
        let title = try rig.currentTitle()
        return try XCTUnwrap(rig.track(titled: title ?? "")?.freq, "Mopidy plays \(String(describing: title))")
    }

    // MARK: - Run on each sound server

    func hearsTheTrackMopidyPlaysAndFollowsNext() throws {
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

    func pauseSilencesWithin200msAndResumeComesBack() throws {
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
}

final class TimedEvents: MopidyEventStreamDelegate {
    let list = Mutex<[(us: Int64, event: MopidyEvent)]>([])
    private let up = Atomic<Bool>(false)
    var connected: Bool { up.load(ordering: .relaxed) }
    func eventStreamConnected(url: String) { up.store(true, ordering: .relaxed) }
    func eventStreamReceived(_ event: MopidyEvent) { list.withLock { $0.append((monotonicUs(), event)) } }
    func eventStreamDisconnected(reason: FailureReason, retryInMs: Int) {}
}

extension DaemonTestCase {
    /// Desktop mixers (pavucontrol, GNOME's and KDE's volume panels) list the stream by these
    /// properties. Both servers show the same ones (PULSE_PROP_* reach pipewire-pulse too); where
    /// they differ is latency: PipeWire 0.3.65's pulse server reports "Buffer Latency: 0 usec" and
    /// "Sink Latency: 0 usec" to `pactl list sink-inputs` (introspection), while the stream's own
    /// timing (pa_simple_get_latency, what heard-now reads) is right on both; so the bridge, and
    /// these tests, take latency from the stream and never from introspection.
    func mixerShowsGrooveAudioWithTheMusicRole() throws {
        XCTAssertTrue(waitUntil(10) { status().contains("\"stream\":\"playing\"") }, status())
        let list = try runCommand(["pactl", "list", "sink-inputs"], env: rig.clientEnvironment(sound))
        XCTAssertEqual(list.status, 0, list.err)
        let ours = list.out.components(separatedBy: "Sink Input #").filter { $0.contains("application.id = \"groove-bridge\"") }
        XCTAssertEqual(ours.count, 1, list.out)
        for property in ["application.name = \"Groove Audio\"", "media.name = \"Groove Audio stream\"",
                         "media.role = \"music\"", "application.icon_name = \"groove-bridge\""] {
            XCTAssertTrue(ours.first?.contains(property) == true, "\(sound.kind): no \(property) in \(ours)")
        }
    }

    /// The rig's sink's latency as `pactl list sinks` reports it (PulseAudio: what it is and what
    /// its streams asked for; PipeWire's pulse server fills these in its own way).
    func sinkLatency() throws -> (now: Int, configured: Int) {
        // pactl's words are translated: read them in the C locale.
        let list = try runCommand(["pactl", "list", "sinks"], env: rig.clientEnvironment(sound).merging(["LC_ALL": "C"]) { $1 })
        XCTAssertEqual(list.status, 0, list.err)
        let ours = list.out.components(separatedBy: "Sink #").first { $0.contains("Name: \(sound.sink)") } ?? ""
        // "Latency: 9873 usec, configured 10000 usec"
        let line = ours.split(separator: "\n").first { $0.contains("Latency:") && $0.contains("configured") } ?? ""
        let numbers = line.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
        guard numbers.count == 2 else { XCTFail("no latency for \(sound.sink) in: \(ours)"); return (-1, -1) }
        return (numbers[0], numbers[1])
    }

    func localPauseSilencesThisComputerButTheHousePlaysOn() throws {
        let rec = try Recorder(rig: rig, sound: sound)
        recorder = rec
        let tones = rig.info.tracks.map(\.freq)
        XCTAssertNotNil(rec.waitForTone(try expectedTone(), candidates: tones, timeout: 5), "no tone from the bridge")
        try playerctl("pause")
        XCTAssertTrue(waitUntil(2) { (try? playerctl("status")) == "Paused" })
        // Silence within the margin a loaded machine holds; how fast is SoundServerTests' pause
        // test's figure (and BENCHMARKS.md's).
        XCTAssertTrue(waitUntil(2) { rec.rms(rec.window(rec.count - 8820, 8820)) < 0.001 }, "still audible after pause")
        XCTAssertEqual(try rig.rpc("core.playback.get_state") as? String, "playing", "the house was paused")
        // keep_warm (30 s by default): the connection is kept, and `status` says until when.
        XCTAssertTrue(status().contains("\"stream_kept_warm_until\""), status())
        try playerctl("play")
        XCTAssertTrue(waitUntil(3) { (try? playerctl("status")) == "Playing" })
        XCTAssertFalse(status().contains("stream_kept_warm_until"), status())
        XCTAssertNotNil(rec.waitForTone(try expectedTone(), candidates: tones, timeout: 5), "no tone after play")
    }

    func localVolumeScalesOnlyThisComputer() throws {
        stopDaemon()
        XCTAssertTrue(waitUntil(3) { client.owner(of: MPRISService.busName) == nil })
        try startDaemon(["--volume", "local"])
        let rec = try Recorder(rig: rig, sound: sound)
        recorder = rec
        let tones = rig.info.tracks.map(\.freq)
        XCTAssertNotNil(rec.waitForTone(try expectedTone(), candidates: tones, timeout: 8))
        let full = rec.rms(rec.window(rec.count - 4410, 4410))
        try playerctl("volume", "0.3")
        XCTAssertTrue(waitUntil(2) { Double((try? playerctl("volume")) ?? "") == 0.3 })
        // The new level is heard once the sound server's buffer played out.
        var quiet = full
        XCTAssertTrue(waitUntil(3) {
            quiet = rec.rms(rec.window(rec.count - 4410, 4410))
            return abs(quiet / full - 0.3) <= 0.05
        }, "heard level \(quiet) vs \(full)")
        XCTAssertEqual(try rig.rpc("core.mixer.get_volume") as? Int, 100, "the house volume changed")
    }

    /// Issue #8: the widget changes when the music does. Six server-side track changes (Mopidy's
    /// own next, and a track running out after a seek near its end); the Metadata signal is
    /// compared with the new tone in the recording, on the same monotonic clock. The recording
    /// starts after the bridge has settled, so the sink's latency changes under its stream
    /// (issue #17: a bridge that keeps the sink's first latency is 190–195 ms off here).
    ///
    /// The bridge measures everything from the stream's live edge to the speaker; what happens
    /// inside the server before audio leaves Icecast (Mopidy's output, the encoder) shows in no
    /// byte of the stream and is `server_delay_ms`. On this rig it varies from run to run and
    /// with the kind of change (measured 0.30–0.45 s), so the test does what doc/behaviour.md tells a user
    /// to do: it measures it first (a raw listener beside the bridge, three changes), sets
    /// `server_delay_ms` to that and reloads, then checks the bridge against the speaker.
    func metadataChangesWhenTheNewTrackIsHeard() throws {
        // An earlier fault test (Icecast frozen for 30 s) leaves the rig's encoder up to ~1 s
        // slower and drifting; only a new pipeline sheds that. Start it afresh, and let the
        // bridge join the new stream.
        func reconnects() -> Int {
            guard let o = try? JSONSerialization.jsonObject(with: Data(status().utf8)) as? [String: Any] else { return -1 }
            return o["stream_reconnects"] as? Int ?? -1
        }
        let before = reconnects()
        try rig.command(["cmd": "restart", "name": "encoder"])
        XCTAssertTrue(waitUntil(30) { reconnects() > before && status().contains("\"stream\":\"playing\"") },
                      "the bridge did not rejoin the restarted encoder's stream: \(status())")
        let listener = RawListener(url: rig.info.stream_url, user: rig.info.user, password: rig.info.password, ogg: true)
        defer { listener.stop() }
        let tones = rig.info.tracks.map(\.freq)
        XCTAssertTrue(waitUntil(8) { listener.seconds > 2 }, "the raw listener decoded nothing")
        let events = TimedEvents()
        let stream = MopidyEventStream(url: rig.info.mopidy_ws_url, delegate: events)
        stream.start()
        defer { stream.stop() }
        XCTAssertTrue(waitUntil(10) { events.connected }, "no events from Mopidy")

        /// Changes track `count` times; returns each change as (Mopidy's event time, new title).
        func changeTracks(_ count: Int) throws -> [(us: Int64, title: String)] {
            let begin = monotonicUs()
            for i in 0..<count {
                let before = try rig.currentTitle() ?? ""
                if i % 2 == 0 {
                    try rig.rpc("core.playback.next")
                } else {
                    try rig.rpc("core.playback.seek", ["time_position": rig.info.track_seconds * 1000 - 1500])
                }
                XCTAssertTrue(waitUntil(6) { (try? rig.currentTitle()) != before }, "change \(i) did not happen")
                usleep(3_000_000)  // the change is heard and published, then a steady stretch
            }
            return events.list.withLock { l in
                l.compactMap { e -> (Int64, String)? in
                    guard e.us >= begin, case .trackPlaybackStarted(let tl) = e.event else { return nil }
                    return (e.us, tl.track.name ?? "")
                }
            }
        }
        /// Mopidy's event → the new tone leaving Icecast, in ms.
        func serverDelayMs(_ eventUs: Int64, _ title: String) -> Int? {
            guard let freq = rig.track(titled: title)?.freq,
                  let out = listener.onTimeUs(ofTone: freq, candidates: tones, fromUs: eventUs - 300_000) else { return nil }
            return Int((out - eventUs) / 1000)
        }

        // Calibration, as a user would tune server_delay_ms.
        let measured = try changeTracks(3).compactMap { serverDelayMs($0.us, $0.title) }.sorted()
        print("heard-now: the rig's server delay (Mopidy's event → out of Icecast), ms: \(measured)")
        XCTAssertGreaterThanOrEqual(measured.count, 2, "the raw listener did not hear the changes")
        let serverDelay = max(0, measured[measured.count / 2])
        let cfg = configDir.appendingPathComponent("groove-bridge/config")
        try FileManager.default.createDirectory(at: cfg.deletingLastPathComponent(), withIntermediateDirectories: true)
        // Kept fixed: what is checked below is the bridge's own measure against that value
        // (LearnedDelayTests checks the delay it learns).
        try "server_delay_ms = \(serverDelay)\nheard_sync_learn = false\n".write(to: cfg, atomically: true, encoding: .utf8)
        let joined = reconnects()
        kill(daemon.processIdentifier, SIGHUP)
        XCTAssertTrue(waitUntil(5) { status().contains("server_delay_ms=\(serverDelay)") }, "not reloaded: \(status())")
        XCTAssertTrue(status().contains("\"stream\":\"playing\""), "the reload interrupted the stream: \(status())")
        XCTAssertEqual(reconnects(), joined, "a new server_delay_ms reconnected the stream")

        // The recorder joins the sink now, while the bridge plays: parec asks for 10 ms, so the
        // sink's latency falls under the bridge's stream (from the ~200 ms the stream set), as
        // when a call starts. The bridge must follow that from the sound server's timing reports.
        let latencyBefore = try sinkLatency()
        let rec = try Recorder(rig: rig, sound: sound)
        recorder = rec
        XCTAssertNotNil(rec.waitForTone(try expectedTone(), candidates: tones, timeout: 8), "the recorder heard no tone")
        let latencyWith = try sinkLatency()
        print("heard-now: the sink's latency (now, configured) before the recorder \(latencyBefore) µs, with it \(latencyWith) µs")
        if sound.kind == "pulseaudio" {
            XCTAssertLessThan(latencyWith.configured * 4, latencyBefore.configured, "the recorder did not lower the sink's latency")
        }
        // Every Metadata title the bridge publishes, with the time it arrived.
        let titles = try TitleSignals(busAddress: rig.info.bus_address)
        let starts = try changeTracks(6)
        titles.stop()
        var aligned: [Int] = [], unaligned: [Int] = [], server: [Int] = []
        for (eventUs, title) in starts {
            guard let freq = rig.track(titled: title)?.freq else { continue }
            let signal = titles.first(title, fromUs: eventUs - 100_000)
            let heard = rec.firstHeard(freq, candidates: tones, fromUs: eventUs)
            guard let signal, let heard else {
                XCTFail("\(title): signal \(String(describing: signal)), heard \(String(describing: heard))")
                continue
            }
            aligned.append(Int((signal - heard) / 1000))
            unaligned.append(Int((eventUs - heard) / 1000))
            server.append(serverDelayMs(eventUs, title) ?? -1)
        }
        print("heard-now: server_delay_ms = \(serverDelay)")
        print("heard-now: Metadata signal − new tone heard, ms: \(aligned)")
        print("heard-now: without alignment (Mopidy's event − new tone heard), ms: \(unaligned)")
        print("heard-now: the rig's server delay at each change, ms: \(server)")
        // What is left once the server's own drift from server_delay_ms is taken out: the bridge's
        // measure of its part (−98…+19 ms over 20 runs here, with the recorder joining late).
        let own = zip(aligned, server).map { $0 + $1 - serverDelay }
        print("heard-now: the bridge's own error (server's drift taken out), ms: \(own)")
        XCTAssertGreaterThanOrEqual(aligned.count, 5)
        // Issue #8's target: each change within 250 ms of when it is heard (measured −116…+89 ms
        // over 20 runs), and each far closer than without the alignment (1.1 to 1.7 s here).
        for (a, u) in zip(aligned, unaligned) {
            XCTAssertLessThanOrEqual(abs(a), 250, "Metadata \(a) ms from the heard change; unaligned \(u) ms")
            XCTAssertLessThan(abs(a) * 2, abs(u), "Metadata \(a) ms from the heard change; unaligned \(u) ms")
        }
        for (o, sd) in zip(own, server) {
            XCTAssertGreaterThanOrEqual(sd, 0, "the raw listener missed a change")
            XCTAssertLessThanOrEqual(abs(o), 150, "the bridge's own measure is \(o) ms off")
        }
        if let lo = aligned.min(), let hi = aligned.max() { print("heard-now: spread within the run \(hi - lo) ms") }
    }
}

/// The stream player on PipeWire (through pipewire-pulse).
final class PipeWireStreamPlayerTests: StreamAudioTestCase {
    override class var soundKind: String { "pipewire" }

    func testHearsTheTrackMopidyPlaysAndFollowsNext() throws { try hearsTheTrackMopidyPlaysAndFollowsNext() }
    func testPauseSilencesWithin200msAndResumeComesBack() throws { try pauseSilencesWithin200msAndResumeComesBack() }
}

/// The groove-bridge binary playing to PipeWire.
final class PipeWireBridgeTests: DaemonTestCase {
    override class var soundKind: String { "pipewire" }

    func testLocalPauseSilencesThisComputerButTheHousePlaysOn() throws { try localPauseSilencesThisComputerButTheHousePlaysOn() }
    func testLocalVolumeScalesOnlyThisComputer() throws { try localVolumeScalesOnlyThisComputer() }
    func testMetadataChangesWhenTheNewTrackIsHeard() throws { try metadataChangesWhenTheNewTrackIsHeard() }
    func testTheMixerShowsGrooveAudioWithTheMusicRole() throws { try mixerShowsGrooveAudioWithTheMusicRole() }
}
