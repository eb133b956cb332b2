import DBus
import Foundation
import MPRIS
import Support
import Synchronization
import XCTest

/// Every signal the bridge sends on /org/mpris/MediaPlayer2, with the time it arrived.
final class SignalWatcher: @unchecked Sendable {
    struct Signal {
        let us: Int64
        let member: String
        let args: [DBusValue]
    }

    private let list = Mutex<[Signal]>([])
    private let stopping = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)

    init(address: String, sender: String) throws {
        let c = try DBusConnection(address: address)
        try c.addMatch("type='signal',sender='\(sender)',path='/org/mpris/MediaPlayer2'")
        let reading = DispatchSemaphore(value: 0)
        Thread.detachNewThread { [self] in
            reading.signal()
            while !stopping.load(ordering: .relaxed) {
                guard let s = c.nextSignal(timeoutMs: 100) else { continue }
                list.withLock { $0.append(Signal(us: s.receivedUs, member: s.member, args: s.args)) }
            }
            done.signal()
        }
        // The match is in place (dbus_bus_add_match waits for the bus's answer), and the thread
        // that stamps each signal's arrival reads before the test acts.
        guard reading.wait(timeout: .now() + 10) == .success else {
            throw Rig.RigError(message: "the signal reader did not start within 10 s")
        }
    }

    func stop() {
        guard !stopping.exchange(true, ordering: .relaxed) else { return }
        done.wait()
    }

    var all: [Signal] { list.withLock { $0 } }

    /// Each PropertiesChanged value of `property` since `us`, in order.
    func changes(of property: String, since us: Int64 = 0) -> [(us: Int64, value: DBusValue)] {
        all.filter { $0.us >= us && $0.member == "PropertiesChanged" }.flatMap { s -> [(Int64, DBusValue)] in
            guard s.args.count == 3, case .dict(_, _, let changed) = s.args[1] else { return [] }
            return changed.compactMap { k, v in k.stringValue == property ? (s.us, v.variantValue ?? v) : nil }
        }
    }

    /// Each Seeked since `us`: when, and the position it carried (µs).
    func seeked(since us: Int64 = 0) -> [(us: Int64, positionUs: Int64)] {
        all.filter { $0.us >= us && $0.member == "Seeked" }.compactMap { s in s.args.first?.int64Value.map { (s.us, $0) } }
    }
}

/// What desktop consumers rely on, one test per consumer, each named after it and citing the
/// rule from its source. The bridge runs as a user's would, against the rig, playing.
final class ConsumerTests: DaemonTestCase {
    var watcher: SignalWatcher?
    var extra: [() -> Void] = []

    override func tearDown() {
        watcher?.stop()
        for undo in extra { undo() }
        extra = []
        super.tearDown()
    }

    func watch() throws -> SignalWatcher {
        let owner = try XCTUnwrap(client.owner(of: MPRISService.busName))
        let w = try SignalWatcher(address: rig.info.bus_address, sender: owner)
        watcher = w
        return w
    }

    func getAll(_ iface: String) throws -> [String: DBusValue] {
        let r = try client.call(destination: MPRISService.busName, path: MPRISInterface.objectPath,
                                interface: MPRISInterface.properties, member: "GetAll", args: [.string(iface)])
        guard case .dict(_, _, let entries)? = r.first else { throw Rig.RigError(message: "GetAll \(iface): \(r)") }
        return Dictionary(uniqueKeysWithValues: entries.compactMap { k, v in k.stringValue.map { ($0, v.variantValue ?? v) } })
    }

    func metadata() throws -> [String: DBusValue] {
        guard case .dict(_, _, let entries)? = try getAll(MPRISInterface.player)["Metadata"] else { return [:] }
        return Dictionary(uniqueKeysWithValues: entries.compactMap { k, v in k.stringValue.map { ($0, v.variantValue ?? v) } })
    }

    func position() throws -> Int64 {
        let r = try client.call(destination: MPRISService.busName, path: MPRISInterface.objectPath,
                                interface: MPRISInterface.properties, member: "Get",
                                args: [.string(MPRISInterface.player), .string("Position")])
        return try XCTUnwrap(r.first?.variantValue?.int64Value)
    }

    func player(_ member: String, _ args: [DBusValue] = []) throws {
        _ = try client.call(destination: MPRISService.busName, path: MPRISInterface.objectPath,
                            interface: MPRISInterface.player, member: member, args: args)
    }

    /// How late this computer hears the house, as the bridge measures it (ms).
    func heardDelayMs() -> Int {
        let o = try? JSONSerialization.jsonObject(with: Data(status().utf8)) as? [String: Any]
        return o?["heard_delay_ms"] as? Int ?? 0
    }

    func waitHeard() {
        XCTAssertTrue(waitUntil(10) { status().contains("\"stream\":\"playing\"") && heardDelayMs() > 0 }, status())
        usleep(500_000)  // the delay estimate settles over the first writes
    }

    /// GNOME Shell (js/ui/mpris.js) shows a player only while its cached CanPlay is true, reads
    /// everything from the PropertiesChanged cache, and its button calls PlayPause;
    /// gnome-settings-daemon's media keys turn Play into PlayPause and switch to a player when
    /// PropertiesChanged says it is Playing; xesam:artist must be `as`, xesam:title `s`.
    func testGNOMEShellAndMediaKeys() throws {
        waitHeard()
        let w = try watch()
        XCTAssertEqual(try getAll(MPRISInterface.player)["CanPlay"], .bool(true))
        let meta = try metadata()
        XCTAssertEqual(meta["xesam:artist"]?.signature, "as")
        XCTAssertEqual(meta["xesam:title"]?.signature, "s")
        let t0 = monotonicUs()
        try player("PlayPause")
        XCTAssertTrue(waitUntil(2) { w.changes(of: "PlaybackStatus", since: t0).last?.value == .string("Paused") },
                      "no PropertiesChanged to Paused after PlayPause")
        XCTAssertEqual(try getAll(MPRISInterface.player)["CanPlay"], .bool(true), "GNOME would hide a paused player")
        let t1 = monotonicUs()
        try player("PlayPause")
        XCTAssertTrue(waitUntil(2) { w.changes(of: "PlaybackStatus", since: t1).last?.value == .string("Playing") },
                      "Playing was not announced by PropertiesChanged: media keys would not switch to it")
        XCTAssertTrue(waitUntil(10) { status().contains("\"stream\":\"playing\"") }, status())
    }

    /// KDE Plasma (libkmpris, PlayerContainer): GetAll of both interfaces must succeed and
    /// Identity be non-empty or the player is ignored; mpris:trackid must be an object path (it
    /// is sent back in SetPosition); the icon comes from DesktopEntry's .desktop file.
    func testKDEPlasma() throws {
        waitHeard()
        let root = try getAll(MPRISInterface.root)
        XCTAssertEqual(root["Identity"], .string("Groove Audio"))
        XCTAssertEqual(root["DesktopEntry"], .string("groove-bridge"))
        let desktop = try String(contentsOf: Rig.projectRoot.appendingPathComponent("desktop/groove-bridge.desktop"), encoding: .utf8)
        XCTAssertTrue(desktop.contains("\nName=Groove Audio\n"), "the .desktop Name must equal Identity (mpristester)")
        let meta = try metadata()
        guard case .objectPath(let trackID)? = meta["mpris:trackid"] else { return XCTFail("trackid: \(String(describing: meta["mpris:trackid"]))") }
        XCTAssertFalse(trackID.rawValue.hasPrefix("/org/mpris"), trackID.rawValue)
        // Plasma's progress bar: SetPosition with the track id it was given.
        let w = try watch()
        let t0 = monotonicUs()
        try player("SetPosition", [.objectPath(trackID), .int64(12_000_000)])
        let limit = Double(heardDelayMs() + 1000) / 1000
        XCTAssertTrue(waitUntil(limit) { !w.seeked(since: t0).isEmpty }, "no Seeked after SetPosition")
        if let s = w.seeked(since: t0).first { XCTAssertEqual(Double(s.positionUs), 12_000_000, accuracy: 300_000) }
    }

    /// KDE Connect (mpriscontrolplugin.cpp): the phone's position slider becomes
    /// Seek(target − Position), with Position read just before. It must land on target.
    func testKDEConnectSeekDanceLandsOnTarget() throws {
        waitHeard()
        let w = try watch()
        let now = try position()
        let target: Int64 = now < 15_000_000 ? 22_000_000 : 6_000_000
        let t0 = monotonicUs()
        try player("Seek", [.int64(target - now)])
        XCTAssertTrue(waitUntil(Double(heardDelayMs() + 1500) / 1000) { !w.seeked(since: t0).isEmpty },
                      "no Seeked after Seek")
        let s = try XCTUnwrap(w.seeked(since: t0).first)
        print("KDE Connect dance: target \(target / 1000) ms, Seeked \(s.positionUs / 1000) ms, \((s.us - t0) / 1000) ms after the call")
        XCTAssertEqual(Double(s.positionUs), Double(target), accuracy: 300_000, "the seek did not land on target")
        // And Position read afterwards is the truth: the Seeked position plus the time since.
        let p = try position()
        let expected = s.positionUs + (monotonicUs() - s.us)
        XCTAssertEqual(Double(p), Double(expected), accuracy: 150_000)
    }

    /// BlueZ (tools/mpris-proxy.c → profiles/audio/media.c): the Player's GetAll is registered
    /// with bluetoothd, which rejects the whole player on any wrong type; a button is honoured
    /// only while its Can* and CanControl are true.
    func testBluetoothHeadsetsThroughMprisProxy() throws {
        waitHeard()
        let p = try getAll(MPRISInterface.player)
        let types: [String: String] = ["PlaybackStatus": "s", "Position": "x", "Shuffle": "b", "LoopStatus": "s",
                                       "CanPlay": "b", "CanPause": "b", "CanGoNext": "b", "CanGoPrevious": "b",
                                       "CanControl": "b", "Metadata": "a{sv}"]
        for (name, type) in types { XCTAssertEqual(p[name]?.signature, type, name) }
        XCTAssertTrue(["None", "Track", "Playlist"].contains(p["LoopStatus"]?.stringValue ?? ""))
        XCTAssertTrue(["Playing", "Paused", "Stopped"].contains(p["PlaybackStatus"]?.stringValue ?? ""))
        let meta = try metadata()
        let metaTypes: [String: String] = ["xesam:title": "s", "xesam:album": "s", "xesam:artist": "as",
                                           "xesam:genre": "as", "mpris:length": "x", "xesam:trackNumber": "i"]
        for (key, type) in metaTypes { if let v = meta[key] { XCTAssertEqual(v.signature, type, key) } }
        XCTAssertNotNil(meta["xesam:title"])
        XCTAssertNotNil(meta["mpris:length"])
        // The buttons it sends (Play, Pause, Stop, Next, Previous) are all honoured.
        XCTAssertEqual(p["CanControl"], .bool(true))
        for flag in ["CanPlay", "CanPause", "CanGoNext", "CanGoPrevious"] { XCTAssertEqual(p[flag], .bool(true), flag) }
    }

    /// playerctld (playerctl-daemon.c): a player moves to the front when it signals a changed
    /// property; `playerctl` without -p then talks to the front one. Waybar, polybar scripts and
    /// many key bindings use it so.
    func testPlayerctldFollowsTheMostRecentlyActivePlayer() throws {
        waitHeard()
        let daemonProcess = Process()
        daemonProcess.executableURL = URL(fileURLWithPath: "/usr/bin/playerctld")
        daemonProcess.environment = rig.clientEnvironment
        daemonProcess.standardOutput = FileHandle.nullDevice
        daemonProcess.standardError = FileHandle.nullDevice
        try daemonProcess.run()
        extra.append { daemonProcess.terminate(); daemonProcess.waitUntilExit() }
        XCTAssertTrue(waitUntil(5) { client.owner(of: "org.mpris.MediaPlayer2.playerctld") != nil }, "playerctld did not start")
        // Another player, which becomes active after the bridge.
        let otherBus = try DBusConnection(address: rig.info.bus_address)
        let other = ScriptedPlayer()
        let service = MPRISService(connection: otherBus, controller: other, initial: PlayerState(),
                                   name: "org.mpris.MediaPlayer2.grooveconsumertest")
        other.service = service
        let otherName = try service.publish()
        otherBus.start(onDisconnect: {})
        extra.append { otherBus.stop(waitMs: 1000) }
        let otherShort = String(otherName.dropFirst("org.mpris.MediaPlayer2.".count))
        func front() -> String? {
            guard let r = try? runCommand(["playerctl", "metadata", "--format", "{{playerInstance}}"], env: rig.clientEnvironment,
                                          timeout: 10), r.status == 0 else { return nil }
            return r.out.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        usleep(300_000)
        service.update { $0.playbackStatus = .playing; $0.metadata = TrackMetadata(trackID: TrackMetadata.trackID(tlid: 1), title: "Other") }
        XCTAssertTrue(waitUntil(5) { front() == otherShort }, "the other player did not come to the front: \(front() ?? "none")")
        // The bridge becomes active again (a Play after a pause here, as a user does).
        try playerctl("pause")
        try playerctl("play")
        XCTAssertTrue(waitUntil(5) { front() == "groove" }, "playerctl without -p does not follow groove: \(front() ?? "none")")
        let before = try XCTUnwrap(rig.currentTitle())
        let r = try runCommand(["playerctl", "next"], env: rig.clientEnvironment, timeout: 10)
        XCTAssertEqual(r.status, 0, r.err)
        XCTAssertTrue(waitUntil(5) { (try? rig.currentTitle()) != before }, "playerctl next without -p did not reach Mopidy")
        XCTAssertEqual(other.log, [], "the command went to the other player")
    }

    /// mpristester's rules over a whole play/seek/next/pause session: CanControl never changes;
    /// MinimumRate ≤ Rate ≤ MaximumRate, Rate ≠ 0; 0 ≤ Position ≤ mpris:length; Position drifts
    /// less than 1 s from the prediction (the last known position moving at Rate while Playing,
    /// reset by Seeked, a new track or a new status).
    func testMpristesterRulesOverASession() throws {
        waitHeard()
        let w = try watch()
        /// A GetAll: sent at `sentUs`, its answer received at `us`.
        struct Sample { let sentUs: Int64; let us: Int64; let p: [String: DBusValue]; let meta: [String: DBusValue] }
        let samples = Mutex<[Sample]>([])
        let stop = Atomic<Bool>(false)
        let sampler = DispatchSemaphore(value: 0)
        let address = rig.info.bus_address
        Thread.detachNewThread {
            defer { sampler.signal() }
            guard let c = try? DBusConnection(address: address) else { return }
            while !stop.load(ordering: .relaxed) {
                let sentUs = monotonicUs()
                if let r = try? c.call(destination: MPRISService.busName, path: MPRISInterface.objectPath,
                                       interface: MPRISInterface.properties, member: "GetAll", args: [.string(MPRISInterface.player)]),
                   case .dict(_, _, let e)? = r.first {
                    let us = monotonicUs()
                    let p = Dictionary(uniqueKeysWithValues: e.compactMap { k, v in k.stringValue.map { ($0, v.variantValue ?? v) } })
                    var meta: [String: DBusValue] = [:]
                    if case .dict(_, _, let m)? = p["Metadata"] {
                        meta = Dictionary(uniqueKeysWithValues: m.compactMap { k, v in k.stringValue.map { ($0, v.variantValue ?? v) } })
                    }
                    samples.withLock { $0.append(Sample(sentUs: sentUs, us: us, p: p, meta: meta)) }
                }
                usleep(100_000)
            }
        }
        // A session: listening, a seek, next, a pause here, play again, previous. The sleeps are
        // the session's pace (the sampler checks every answer in between), not waits for events.
        usleep(2_000_000)
        if case .objectPath(let id)? = try metadata()["mpris:trackid"] { try player("SetPosition", [.objectPath(id), .int64(8_000_000)]) }
        usleep(3_000_000)
        try playerctl("next")
        usleep(3_000_000)
        try playerctl("pause")
        usleep(2_000_000)
        try playerctl("play")
        usleep(3_000_000)
        try playerctl("previous")
        usleep(3_000_000)
        stop.store(true, ordering: .relaxed)
        sampler.wait()

        let all = samples.withLock { $0 }
        XCTAssertGreaterThan(all.count, 50)
        let seeks = w.seeked()
        var base: (us: Int64, pos: Int64, playing: Bool, track: DBusValue?)? = nil
        var worst: Int64 = 0
        for s in all {
            XCTAssertEqual(s.p["CanControl"], .bool(true), "CanControl changed")
            let rate = s.p["Rate"]?.doubleValue ?? 0, lo = s.p["MinimumRate"]?.doubleValue ?? 9, hi = s.p["MaximumRate"]?.doubleValue ?? -9
            XCTAssertTrue(lo <= rate && rate <= hi && rate != 0, "rate \(lo) ≤ \(rate) ≤ \(hi)")
            let pos = try XCTUnwrap(s.p["Position"]?.int64Value)
            XCTAssertGreaterThanOrEqual(pos, 0)
            if let len = s.meta["mpris:length"]?.int64Value { XCTAssertLessThanOrEqual(pos, len, "Position past the length") }
            let playing = s.p["PlaybackStatus"] == .string("Playing")
            let track = s.meta["mpris:trackid"]
            // A Seeked received before the GetAll was sent was signalled before it was answered:
            // it resets the model to what it carried. One received while the call was under way
            // came through the bus beside the answer, from either side of it: the sample is held
            // against the model with it and without, and the nearer one is taken.
            if let b = base, let sk = seeks.last(where: { $0.us > b.us && $0.us <= s.sentUs }) {
                base = (sk.us, sk.positionUs, b.playing, b.track)
            }
            func model(from us: Int64, _ p: Int64) -> Int64 { p + (playing ? s.us - us : 0) }
            if let b = base, let sk = seeks.last(where: { $0.us > max(b.us, s.sentUs) && $0.us <= s.us }), b.track == track,
               b.playing == playing, abs(pos - model(from: sk.us, sk.positionUs)) < abs(pos - model(from: b.us, b.pos)) {
                base = (sk.us, sk.positionUs, b.playing, b.track)
            }
            if let b = base, b.track == track, b.playing == playing {
                let predicted = model(from: b.us, b.pos)
                let drift = abs(pos - predicted)
                worst = max(worst, drift)
                XCTAssertLessThan(drift, 1_000_000, "Position \(pos / 1000) ms, predicted \(predicted / 1000) ms")
            } else {
                base = (s.us, pos, playing, track)
            }
        }
        print("mpristester: \(all.count) samples, \(seeks.count) Seeked, worst drift from the prediction \(worst / 1000) ms")
    }

    /// Issue #15: Previous restarts the track (Mopidy with repeat on): the jump back to 0 is a
    /// Seeked, received within the heard delay + 200 ms.
    func testPreviousRestartingTheTrackEmitsSeeked() throws {
        waitHeard()
        XCTAssertTrue(waitUntil(10) { ((try? position()) ?? 0) > 4_000_000 }, "not 4 s into the track")
        let title = try rig.currentTitle()
        let w = try watch()
        let t0 = monotonicUs()
        let limitMs = heardDelayMs() + 200
        try playerctl("previous")
        XCTAssertTrue(waitUntil(Double(limitMs + 1000) / 1000) { !w.seeked(since: t0).isEmpty }, "no Seeked after Previous")
        let s = try XCTUnwrap(w.seeked(since: t0).first)
        print("Previous: Seeked to \(s.positionUs / 1000) ms \((s.us - t0) / 1000) ms after the call (limit \(limitMs) ms)")
        XCTAssertEqual(try rig.currentTitle(), title, "Previous changed the track: this rig restarts it (repeat on)")
        XCTAssertLessThan(s.positionUs, 1_000_000)
        XCTAssertLessThanOrEqual((s.us - t0) / 1000, Int64(limitMs))
    }

    /// Issue #15: Stop is Stopped (within 200 ms), at position 0, the track still shown; Play
    /// after it joins the live edge and the music comes back.
    func testStopIsStoppedAndPlayComesBack() throws {
        let rec = try Recorder(rig: rig)
        recorder = rec
        let tones = rig.info.tracks.map(\.freq)
        XCTAssertNotNil(rec.waitForTone(try expectedTone(), candidates: tones, timeout: 8))
        let title = try metadata()["xesam:title"]
        let w = try watch()
        let t0 = monotonicUs()
        try player("Stop")
        XCTAssertTrue(waitUntil(1) { w.changes(of: "PlaybackStatus", since: t0).last?.value == .string("Stopped") })
        let stopped = try XCTUnwrap(w.changes(of: "PlaybackStatus", since: t0).last)
        XCTAssertLessThanOrEqual((stopped.us - t0) / 1000, 200, "Stopped was announced late")
        XCTAssertEqual(try position(), 0)
        XCTAssertEqual(try metadata()["xesam:title"], title, "the track is still shown")
        XCTAssertTrue(waitUntil(2) { rec.rms(rec.window(rec.count - 8820, 8820)) < 0.001 }, "still audible after Stop")
        XCTAssertEqual(try rig.rpc("core.playback.get_state") as? String, "playing", "control = local stopped the house")
        try player("Play")
        XCTAssertTrue(waitUntil(3) { (try? playerctl("status")) == "Playing" })
        XCTAssertNotNil(rec.waitForTone(try expectedTone(), candidates: tones, timeout: 8), "no music after Play")
    }
}
