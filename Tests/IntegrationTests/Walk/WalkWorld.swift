import DBus
import Foundation
import MPRIS
import Support

/// Performs walk steps with their real causes: MPRIS calls on the rig's bus, another Mopidy
/// client (the rig's JSON-RPC), pactl on the sound server, the rig's services, the stand-in system
/// bus, SIGHUP after a new configuration. Remembers what it broke so that a walk can be mended.
final class WalkWorld {
    let rig: Rig
    let sound: Rig.Sound
    let client: DBusConnection
    let system: FakeSystemBus
    let walkSink: String
    let configFile: URL
    let daemonPid: () -> pid_t
    private(set) var state = WalkWorldState()
    private var module: String?
    private var secondStreams: [Process] = []
    private let toneFile: String
    /// When each kind of disturbance last ended (monotonic µs): the invariants give the bridge
    /// time to come back after it.
    /// Until when a fault lasts (a stall's end lies ahead), or when the last one ended.
    private(set) var lastDisturbanceUs: Int64 = 0
    /// Lets Icecast go at the end of a stall.
    private var thawer: Process?
    /// When a track change was last asked for here (Next, Previous, a Seek past the end):
    /// published at once, ahead of the music on purpose.
    private(set) var lastUserTrackChangeUs: Int64 = 0
    /// When the position was last moved on purpose by anyone (a seek, Previous, a house seek).
    private(set) var lastJumpAskedUs: Int64 = 0
    /// When a resync could correct the position a little without Seeked (a reconnect of events).
    private(set) var lastResyncCauseUs: Int64 = 0
    /// When the bridge's sink was last unloaded, and what `on_output_lost` said then.
    private(set) var sinkRemovedUs: Int64 = 0
    private(set) var onOutputLost = "pause"
    /// Another client moved the house to another track while it did not play: Mopidy says so to
    /// no one (no event), so nobody can show it until the house plays again.
    private(set) var houseTrackUnknown = false

    init(rig: Rig, sound: Rig.Sound, client: DBusConnection, system: FakeSystemBus, walkSink: String,
         configFile: URL, daemonPid: @escaping () -> pid_t) throws {
        self.rig = rig; self.sound = sound; self.client = client; self.system = system
        self.walkSink = walkSink; self.configFile = configFile; self.daemonPid = daemonPid
        toneFile = FileManager.default.temporaryDirectory.appendingPathComponent("walk-2khz-\(getpid()).wav").path
        if !FileManager.default.fileExists(atPath: toneFile) {
            let r = try runCommand(["sox", "-n", "-r", "44100", "-c", "2", toneFile, "synth", "2", "sine", "2000", "vol", "0.3"])
            guard r.status == 0 else { throw Rig.RigError(message: "sox: \(r.err)") }
        }
        try loadSink()
        try writeConfig(serverDelayMs: 400, onOutputLost: "pause")
    }

    var env: [String: String] { rig.clientEnvironment(sound) }

    func pactl(_ args: String...) throws -> String {
        let r = try runCommand(["pactl"] + args, env: env, timeout: 10)
        guard r.status == 0 else { throw Rig.RigError(message: "pactl \(args.joined(separator: " ")): \(r.err)") }
        return r.out.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private func loadSink() throws {
        module = try pactl("load-module", "module-null-sink", "sink_name=\(walkSink)", "rate=44100", "channels=2")
        state.sinkLoaded = true
    }

    func writeConfig(serverDelayMs: Int, onOutputLost: String, keepWarm: Int = 30) throws {
        let text = "server_delay_ms = \(serverDelayMs)\non_output_lost = \(onOutputLost)\nkeep_warm = \(keepWarm)\n"
        try text.write(to: configFile, atomically: true, encoding: .utf8)
        chmod(configFile.path, 0o600)
    }

    private func player(_ member: String, _ args: [DBusValue] = []) throws {
        _ = try client.call(destination: MPRISService.busName, path: MPRISInterface.objectPath,
                            interface: MPRISInterface.player, member: member, args: args)
    }

    private func set(_ property: String, _ value: DBusValue) throws {
        _ = try client.call(destination: MPRISService.busName, path: MPRISInterface.objectPath,
                            interface: MPRISInterface.properties, member: "Set",
                            args: [.string(MPRISInterface.player), .string(property), .variant(value)])
    }

    private func get(_ property: String) throws -> DBusValue? {
        try client.call(destination: MPRISService.busName, path: MPRISInterface.objectPath,
                        interface: MPRISInterface.properties, member: "Get",
                        args: [.string(MPRISInterface.player), .string(property)]).first?.variantValue
    }

    /// Does what the step says. A step that makes no sense in this state (a sink added that is
    /// there) does nothing; an MPRIS error reply is an answer, not a failure (e.g. a stale id).
    func perform(_ step: WalkStep) throws {
        let now = monotonicUs()
        switch step {
        case .mpris(let m):
            if ["Next", "Previous"].contains(m) { lastUserTrackChangeUs = now }
            if m == "Previous" { lastJumpAskedUs = now }
            if m == "Play" || m == "PlayPause" {
                state.asleep = false
                houseTrackUnknown = false
            }
            try? player(m)
        case .seek(let ms):
            lastJumpAskedUs = now
            // MPRIS: a Seek past the track's end is Next. The bridge judges by its own Position a
            // moment later: within a second of the end counts too.
            if let position = try? get("Position")?.int64Value,
               let length = WalkInvariants.lengthUs(try? get("Metadata")),
               position + Int64(ms) * 1000 > length - 1_000_000 { lastUserTrackChangeUs = now }
            try? player("Seek", [.int64(Int64(ms) * 1000)])
        case .setPosition(let ms):
            lastJumpAskedUs = now
            guard case .dict(_, _, let entries)? = try get("Metadata"),
                  let id = entries.first(where: { $0.0.stringValue == "mpris:trackid" })?.1.variantValue?.objectPathValue
            else { return }
            try? player("SetPosition", [.objectPath(id), .int64(Int64(ms) * 1000)])
        case .volume(let p): try? set("Volume", .double(Double(p) / 100))
        case .shuffle(let on): try? set("Shuffle", .bool(on))
        case .loop(let s): try? set("LoopStatus", .string(s))
        case .house(let m):
            if ["next", "previous"].contains(m) {
                lastJumpAskedUs = now
                if (try? rig.rpc("core.playback.get_state")) as? String != "playing" { houseTrackUnknown = true }
            }
            // Play starts a stopped house and its start tells the track; Mopidy's resume acts on a
            // paused house only (on a stopped one it does nothing, and nothing is told).
            if m == "play" || (m == "resume" && (try? rig.rpc("core.playback.get_state")) as? String == "paused") {
                houseTrackUnknown = false
            }
            _ = try? rig.rpc("core.playback.\(m)")
        case .houseSeek(let ms):
            lastJumpAskedUs = now
            _ = try? rig.rpc("core.playback.seek", ["time_position": ms])
        case .houseVolume(let p): _ = try? rig.rpc("core.mixer.set_volume", ["volume": p])
        case .houseMute(let on): _ = try? rig.rpc("core.mixer.set_mute", ["mute": on])
        case .houseRepeat(let on): _ = try? rig.rpc("core.tracklist.set_repeat", ["value": on])
        case .houseRandom(let on): _ = try? rig.rpc("core.tracklist.set_random", ["value": on])
        case .sinkRemove:
            guard let m = module else { return }
            module = nil
            state.sinkLoaded = false
            state.defaultIsWalk = false
            lastDisturbanceUs = max(lastDisturbanceUs, now)
            sinkRemovedUs = monotonicUs()
            _ = try pactl("unload-module", m)
        case .sinkAdd:
            guard module == nil else { return }
            try loadSink()
        case .defaultSink(let which):
            guard which == "rig" || module != nil else { return }
            _ = try pactl("set-default-sink", which == "walk" ? walkSink : sound.sink)
            state.defaultIsWalk = which == "walk"
        case .secondStream:
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            p.arguments = ["paplay", "--device=\(module != nil ? walkSink : sound.sink)", toneFile]
            p.environment = env
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.run()
            secondStreams.append(p)
        case .kill(let s):
            guard !state.down.contains(s) else { return }
            state.down.insert(s)
            lastDisturbanceUs = max(lastDisturbanceUs, now)
            lastResyncCauseUs = now
            try rig.stop(s, signal: "KILL")
        case .start(let s):
            guard state.down.contains(s) else { return }
            _ = try rig.start(s)
            if s == "icecast" { _ = try? rig.waitLive() }
            if s == "mopidy" { houseTrackUnknown = false }
            state.down.remove(s)
            lastDisturbanceUs = max(lastDisturbanceUs, monotonicUs())
            lastResyncCauseUs = lastDisturbanceUs
        case .stall(let ms):
            guard !state.down.contains("icecast"), thawer?.isRunning != true else { return }
            // Frozen now and let go `ms` later by a child of its own, while the next steps go on:
            // a stall overlaps what the house and the user do meanwhile.
            guard let pid = try rig.signal("icecast", "STOP") else { return }
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/bin/sh")
            p.arguments = ["-c", "sleep \(Double(ms) / 1000); exec kill -CONT \(pid)"]
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.run()
            thawer = p
            lastDisturbanceUs = max(lastDisturbanceUs, now + Int64(ms) * 1000)
        case .suspend:
            state.asleep = true
            lastDisturbanceUs = max(lastDisturbanceUs, now)
            lastResyncCauseUs = now
            system.prepareForSleep(true)
        case .wake:
            guard state.asleep else { return }
            state.asleep = false
            lastDisturbanceUs = max(lastDisturbanceUs, now)
            lastResyncCauseUs = now
            system.prepareForSleep(false)
        case .networkDown:
            state.networkUp = false
            lastDisturbanceUs = max(lastDisturbanceUs, now)
            lastResyncCauseUs = now
            system.networkState(20)
        case .networkUp:
            guard !state.networkUp else { return }
            state.networkUp = true
            lastDisturbanceUs = max(lastDisturbanceUs, now)
            lastResyncCauseUs = now
            system.networkState(70)
        case .reload(let d, let lost, let warm):
            try writeConfig(serverDelayMs: d, onOutputLost: lost, keepWarm: warm)
            onOutputLost = lost
            kill(daemonPid(), SIGHUP)
            lastDisturbanceUs = max(lastDisturbanceUs, now)
        case .wait(let ms):
            usleep(UInt32(ms) * 1000)
        }
        secondStreams.removeAll { !$0.isRunning }
    }

    /// Everything a walk broke, mended, and the house as the rig keeps it: playing, repeat on,
    /// random off, unmuted at full volume, its own sink the default.
    func mend() {
        for p in secondStreams where p.isRunning { p.terminate() }
        secondStreams = []
        if state.asleep { system.prepareForSleep(false); state.asleep = false }
        if !state.networkUp { system.networkState(70); state.networkUp = true }
        // Each repair is tried whatever the one before did: one that fails must not leave the
        // house muted, say, for the next walk. What fails is said.
        func attempt(_ what: String, _ body: () throws -> Void) {
            do { try body() } catch { print("walk: mend: \(what): \(error)") }
        }
        for s in state.down { attempt("start \(s)") { _ = try rig.start(s) } }
        if state.down.contains("icecast") { attempt("wait for the mount") { _ = try rig.waitLive() } }
        state.down = []
        if let t = thawer, t.isRunning { t.terminate() }
        thawer = nil
        attempt("thaw icecast") { try rig.signal("icecast", "CONT") }
        if module == nil { attempt("load the sink") { try loadSink() } }
        attempt("default sink") { _ = try pactl("set-default-sink", sound.sink) }
        state.defaultIsWalk = false
        // The rig's Mopidy has been seen to stop answering after a walk (rarely, under load): it is
        // not the bridge under test, so it is started afresh, with the end of its log shown.
        if (try? rig.rpc("core.get_version")) == nil {
            let log = (try? String(contentsOfFile: "\(rig.info.dir)/logs/mopidy.log", encoding: .utf8)) ?? ""
            print("walk: mend: Mopidy does not answer; started again. Its log ends:")
            for line in log.split(separator: "\n").suffix(15) { print("walk:   \(line)") }
            attempt("restart mopidy") {
                try rig.stop("mopidy", signal: "KILL")
                _ = try rig.start("mopidy")
            }
        }
        let house: [(String, [String: Any])] = [
            ("core.mixer.set_mute", ["mute": false]), ("core.mixer.set_volume", ["volume": 100]),
            ("core.tracklist.set_repeat", ["value": true]), ("core.tracklist.set_random", ["value": false]),
            ("core.tracklist.set_single", ["value": false]), ("core.playback.play", [:]),
        ]
        for (method, params) in house { attempt(method) { _ = try rig.rpc(method, params) } }
        houseTrackUnknown = false
        attempt("configuration") { try writeConfig(serverDelayMs: 400, onOutputLost: "pause") }
        onOutputLost = "pause"
    }

    /// The walk's sink goes for good (end of the test).
    func close() {
        for p in secondStreams where p.isRunning { p.terminate() }
        if let m = module { _ = try? pactl("unload-module", m) }
        module = nil
        _ = try? pactl("set-default-sink", sound.sink)
    }
}
