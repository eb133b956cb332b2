// libFuzzer target: any bytes as a sequence of what reaches the bridge — Mopidy's events (also as
// JSON text through the real decoder), Mopidy's replies, stream statuses, configuration reloads,
// time passing, suspend, network changes, route probe answers, and MPRIS method calls from any client with any arguments through the pure call
// handler — each reduced by `BridgeState.reduce`. Values come from a hostile set (int64 and Int
// extremes, NaN and infinities, negative positions, empty and long strings). Nothing may trap,
// and after every step what is published must make sense and the state's deadline must move on.
//
// Built by scripts/fuzz with -sanitize=fuzzer,address -DFUZZING. Built normally, it replays
// inputs: groove-bridge-fuzz FILE… (a crash scripts/fuzz found, under a debugger).
import Audio
import Bridge
import DBus
import MPRIS
import Mopidy
import Net
import Support
@preconcurrency import Glibc

/// Turns fuzz input into choices. Past the end every choice is 0.
struct Choices {
    let bytes: [UInt8]
    var i = 0

    mutating func byte() -> UInt8 {
        defer { i += 1 }
        return i < bytes.count ? bytes[i] : 0
    }

    mutating func bool() -> Bool { byte() & 1 == 1 }

    mutating func pick<T>(_ options: [T]) -> T { options[Int(byte()) % options.count] }

    mutating func int() -> Int {
        switch byte() % 12 {
        case 0: return 0
        case 1: return -1
        case 2: return .max
        case 3: return .min
        case 4: return Int(Int32.max)
        case 5: return 1 << 53
        case 6: return 30_000
        case 7: return -30_000
        default: return Int(Int16(truncatingIfNeeded: UInt16(byte()) << 8 | UInt16(byte()))) * 97
        }
    }

    mutating func int64() -> Int64 { Int64(int()) }

    mutating func double() -> Double {
        pick([.nan, .infinity, -.infinity, 0, -0.0, 1, 0.5, -0.5, 1e308, -1e308, 2, .ulpOfOne])
    }

    mutating func string() -> String {
        switch byte() % 6 {
        case 0: return ""
        case 1: return "local:track:\(byte())"
        case 2: return String(repeating: "é", count: Int(byte()) * 64)
        case 3: return "\u{1b}[2J\u{0}"
        case 4: return "http://u:p@127.0.0.1/x"
        default: return "One"
        }
    }

    mutating func track() -> TlTrack? {
        guard byte() % 8 != 0 else { return nil }
        let id = Int(byte() % 4)
        return TlTrack(tlid: pick([id, id, int()]), track: Track(
            uri: pick(["local:track:\(id)", string()]), name: pick([nil, "T\(id)", string()]),
            artists: bool() ? ["A"] : [string(), string()], genre: bool() ? nil : string(),
            trackNumber: bool() ? nil : int(), discNumber: bool() ? nil : int(), lengthMs: bool() ? 30_000 : int()))
    }

    mutating func state() -> PlaybackState { pick([.playing, .paused, .stopped]) }

    mutating func event() -> MopidyEvent {
        switch byte() % 14 {
        case 0: return track().map(MopidyEvent.trackPlaybackStarted) ?? .tracklistChanged
        case 1: return .trackPlaybackPaused(track(), positionMs: int())
        case 2: return .trackPlaybackResumed(track(), positionMs: int())
        case 3: return .trackPlaybackEnded(track(), positionMs: int())
        case 4: return .playbackStateChanged(old: state(), new: state())
        case 5: return .tracklistChanged
        case 6: return .optionsChanged
        case 7: return .volumeChanged(int())
        case 8: return .seeked(positionMs: int())
        case 9: return .streamTitleChanged(string())
        case 10: return .muteChanged(bool())
        case 11: return .playlistsLoaded
        case 12: return bool() ? .playlistChanged : .playlistDeleted
        default: return .other(string())
        }
    }

    mutating func call() -> MopidyCall {
        pick([.resync(generation: Int(byte() % 4)), .refreshNeighbours, .refreshOptions, .play, .resume, .pause, .stop, .next, .previous,
              .seek(ms: int()), .setVolume(int()), .setLoop(pick([.none, .track, .playlist])), .setRandom(bool()),
              .open(uri: string()), .refreshTracklist, .refreshPlaylists,
              .addTrack(uri: string(), afterTlid: bool() ? nil : int(), play: bool()), .removeTrack(tlid: int()),
              .goTo(tlid: int()), .activatePlaylist(uri: string())])
    }

    mutating func reply() -> Reply {
        switch byte() % 8 {
        case 5: return .tracklist((0..<Int(byte() % 8)).compactMap { _ in track() })
        case 6: return .playlists((0..<Int(byte() % 4)).map { _ in PlaylistInfo(uri: string(), name: string()) })
        case 7: return .activated(uri: string(), tlids: [int(), Int(byte() % 4)])
        case 0:
            var s = Snapshot(rpcURL: string(), current: track(), state: state(), positionMs: int(), volume: bool() ? nil : int())
            s.repeatOn = bool(); s.single = bool(); s.random = bool()
            s.generation = Int(byte() % 4)
            s.nextTlid = bool() ? nil : int(); s.previousTlid = bool() ? nil : int()
            s.uriSchemes = bool() ? [] : ["local", string()]
            return .synced(s)
        case 1: return .neighbours(next: bool() ? nil : int(), previous: bool() ? nil : int())
        case 2: return .options(repeatOn: bool(), single: bool(), random: bool())
        case 3: return .done(call())
        default: return .failed(call(), reason: reason())
        }
    }

    mutating func streamStatus() -> StreamStatus {
        pick([.stopped, .connecting, .buffering, .playing, .paused, .reconnecting(inMs: int(), reason: string()),
              .failed(reason: reason(), retryInMs: int())])
    }

    /// A failure, a refusal one time in four.
    mutating func reason() -> FailureReason {
        FailureReason(byte() % 4 == 0 ? .unauthorized(httpStatus: pick([401, 403])) : .other, string())
    }

    mutating func config() -> Config {
        var c = Config()
        if bool() { c.streamURL = "http://127.0.0.1:1/stream.flac" }
        c.control = bool() ? .local : .server
        c.volume = bool() ? .server : .local
        c.notify = bool()
        c.heardSync = bool()
        c.serverDelayMs = pick([400, 0, 30_000, int()])
        c.password = bool() ? nil : string()
        if bool() {
            c.rpcURL = "http://127.0.0.1:1/mopidy/rpc"
            c.wsURL = "ws://127.0.0.1:1/mopidy/ws"
        }
        if bool() {
            c.remoteHost = pick(["groove.example.org", "::1", string()])
            if bool() { c.remoteStreamURL = "https://127.0.0.1:2/stream.flac" }
        }
        return c
    }

    /// Suspend, NetworkManager's states (any 32-bit value, through the real mapping) and the
    /// answers of route probes, for either route, expected or not.
    mutating func link() -> Input {
        switch byte() % 3 {
        case 0: return .sleeping(bool())
        case 1:
            let state = pick([UInt32(70), 20, 10, 40, 50, 0, .max, UInt32(truncatingIfNeeded: int())])
            return .network(NetworkState(networkManager: state) ?? .unknown)
        default: return .probed(pick(Route.allCases), answered: bool(), detail: string())
        }
    }

    /// Any argument D-Bus can carry, mostly the types MPRIS calls take.
    mutating func value() -> DBusValue {
        switch byte() % 10 {
        case 0: return .int64(int64())
        case 1: return .double(double())
        case 2: return .string(string())
        case 3: return .objectPath(pick([TrackMetadata.trackID(tlid: Int(byte() % 4)), TrackMetadata.noTrackID,
                                         ObjectPath("/")!]))
        case 4: return .bool(bool())
        case 5: return .variant(value())
        case 6: return .int32(Int32(truncatingIfNeeded: int()))
        case 7: return .uint64(UInt64(truncatingIfNeeded: int()))
        case 8: return pick([.strings([string()]), .uint32(UInt32(truncatingIfNeeded: int())),
                             .array(element: "o", [.objectPath(TrackMetadata.trackID(tlid: Int(byte() % 4)))])])
        default: return .vardict([(string(), .variant(.string(string())))])
        }
    }

    mutating func methodCall() -> MethodCall {
        let iface = pick([MPRISInterface.player, MPRISInterface.root, MPRISInterface.properties, MPRISInterface.trackList,
                          MPRISInterface.playlists,
                          MPRISInterface.introspectable, MPRISInterface.peer, "io.github.GrooveBridge1", "x.y"])
        let member = pick(["Play", "Pause", "PlayPause", "Stop", "Next", "Previous", "Seek", "SetPosition", "OpenUri",
                           "Raise", "Quit", "Get", "GetAll", "Set", "Introspect", "Status", "Nope", "GetTracksMetadata",
                           "AddTrack", "RemoveTrack", "GoTo", "ActivatePlaylist", "GetPlaylists"])
        var args: [DBusValue] = []
        switch member {
        case "Get", "GetAll", "Set":
            args = [.string(pick([MPRISInterface.player, MPRISInterface.root, MPRISInterface.trackList, MPRISInterface.playlists, string()])),
                    .string(pick((MPRISProperty.player + MPRISProperty.root + MPRISProperty.trackList + MPRISProperty.playlists)
                        .map(\.name) + ["Nope"])), .variant(value())]
            args = Array(args.prefix(Int(byte() % 4)))
        default:
            for _ in 0..<Int(byte() % 3) { args.append(value()) }
        }
        return MethodCall(path: MPRISInterface.objectPath, interface: bool() ? iface : nil, member: member,
                          sender: ":1.1", signature: args.map(\.signature).joined(), args: args)
    }
}

func check(_ p: PlayerState, nowUs: Int64) {
    let pos = p.position(nowUs: nowUs)
    precondition(pos >= 0, "negative Position \(pos)")
    if let len = p.metadata.lengthUs, len > 0 { precondition(pos <= len, "Position \(pos) past the length \(len)") }
    precondition(p.volume.isFinite && (0...1).contains(p.volume), "Volume \(p.volume)")
    for iface in [MPRISInterface.root, MPRISInterface.player, MPRISInterface.trackList, MPRISInterface.playlists] {
        for (name, value) in p.properties(of: iface, nowUs: nowUs)! {
            let declared = MPRISProperty.table(of: iface)!.first { $0.name == name }!.type
            precondition(value.signature == declared, "\(name) is \(value.signature), declared \(declared)")
        }
    }
}

func run(_ bytes: [UInt8]) {
    var c = Choices(bytes: bytes)
    var state = BridgeState(config: c.config(), canRaise: c.bool())
    var nowUs: Int64 = 1_000_000_000
    var sequence = 0
    for _ in 0..<256 {
        guard c.i < bytes.count else { break }
        // Time passes: mostly a little, sometimes a lot.
        nowUs = nowUs.adding(saturating: c.pick([0, 1_000, 250_000, 1_500_000, 30_000_000, 86_400_000_000]))
        let moment = Moment(nowUs: nowUs, streamDelayMs: c.pick([0, 1000, c.int()]))
        var inputs: [Input] = []
        switch c.byte() % 11 {
        case 0, 1: inputs = [.event(c.event())]
        case 2: inputs = [.reply(c.reply())]
        case 3:
            sequence += c.pick([1, 1, -1])
            inputs = [.streamStatus(c.streamStatus(), sequence: sequence)]
        case 4: inputs = [c.bool() ? .eventsConnected(url: c.pick(["ws://127.0.0.1:1/mopidy/ws", "ws://h:8180/ws/mopidy", c.string()])) : .eventsDisconnected(reason: c.reason())]
        case 5: inputs = [.reload(c.config())]
        case 6: inputs = [c.bool() ? .artReady(trackURI: c.string(), file: c.bool() ? nil : "file:///a.jpg")
                                   : .coverReady(trackURI: c.pick(["local:track:1", c.string()]), file: c.bool() ? nil : "file:///b.jpg")]
        case 7:
            // A JSON text from the input through the real decoder.
            let n = Int(c.byte())
            let text = Array(bytes[min(c.i, bytes.count)..<min(c.i + n, bytes.count)])
            c.i += n
            if let json = try? JSON.parse(text), let e = try? MopidyEvent.decode(json) { inputs = [.event(e)] }
        case 8:
            let (_, commands) = MPRISCalls.answer(c.methodCall(), state: state.published, nowUs: nowUs, status: { "{}" })
            inputs = commands.map(Input.command)
        case 9: inputs = [c.link()]
        default:
            inputs = [.due]
        }
        for input in inputs {
            for effect in state.reduce(input, at: moment) {
                if case .publish(let p) = effect { _ = p.metadata.dbusValue }
                if case .signal(_, _, let args) = effect { _ = args.map(\.signature) }
            }
            check(state.published, nowUs: nowUs)
        }
        // Never spins: once its deadline is handed in, the state asks for a later one or none.
        if let d = state.nextDeadlineMs {
            let at = Int64(max(d, moment.nowMs)).multiplied(saturating: 1000)
            _ = state.reduce(.due, at: Moment(nowUs: at, streamDelayMs: moment.streamDelayMs))
            if let next = state.nextDeadlineMs { precondition(next > max(d, moment.nowMs), "deadline \(next) did not move on from \(d)") }
        }
        // A route is taken only when it is configured, and the stream follows it.
        if state.link.route == .remote {
            precondition(state.config.remoteLayouts != nil, "on a remote route that is not configured")
            if let sc = state.streamConfig { precondition(sc.url == state.config.effectiveRemoteStreamURL, "stream not on the route") }
        }
        let tracks = state.published.tracklist
        precondition(tracks.count <= 100, "Tracks has \(tracks.count)")
        if let first = tracks.first, state.published.metadata.trackID != TrackMetadata.noTrackID {
            precondition(first.trackID == state.published.metadata.trackID || !tracks.contains { $0.trackID == state.published.metadata.trackID },
                         "mpris:trackid is in Tracks but not first")
        }
    }
}

#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    run(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
    return 0
}

@_silgen_name("LLVMFuzzerRunDriver")
func runDriver(_ argc: UnsafeMutablePointer<Int32>,
               _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
               _ test: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Int32

/// SwiftPM links an executable's entry point under this name; libFuzzer's driver takes over.
@_cdecl("groove_bridge_fuzz_main")
func fuzzMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Int32 {
    var count = argc
    var values = argv
    return runDriver(&count, &values, fuzz)
}
#else
@main
struct Replay {
    static func main() {
        for path in CommandLine.arguments.dropFirst() {
            guard let f = fopen(path, "rb") else { continue }
            var bytes: [UInt8] = []
            var buf = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = fread(&buf, 1, buf.count, f)
                if n <= 0 { break }
                bytes += buf[0..<n]
            }
            fclose(f)
            run(bytes)
            print("\(path): ok")
        }
    }
}
#endif
