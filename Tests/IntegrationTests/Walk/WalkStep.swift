import Foundation

/// One thing a user, the house, the desktop or the machine does, as the sequence test walks it.
/// Each has a text form (`description`, parsed back by `init?(_:)`) so that a walk can be printed,
/// kept in `Walks/` and replayed.
enum WalkStep: Equatable, CustomStringConvertible {
    /// An MPRIS method without arguments: Play, Pause, PlayPause, Stop, Next, Previous.
    case mpris(String)
    /// MPRIS Seek by this many ms (negative: back).
    case seek(Int)
    /// MPRIS SetPosition on the current track, ms.
    case setPosition(Int)
    /// MPRIS Volume, percent.
    case volume(Int)
    case shuffle(Bool)
    case loop(String)
    /// Another Mopidy client: core.playback play, pause, resume, stop, next, previous.
    case house(String)
    case houseSeek(Int)
    case houseVolume(Int)
    case houseMute(Bool)
    case houseRepeat(Bool)
    case houseRandom(Bool)
    /// The bridge's output sink unloaded (PulseAudio moves the stream to the default), and back.
    case sinkRemove, sinkAdd
    /// The default sink becomes the bridge's own ("walk") or the rig's ("rig").
    case defaultSink(String)
    /// Another program plays a 2 kHz tone on the bridge's sink for two seconds.
    case secondStream
    /// A service of the rig ("icecast", "mopidy") killed, or started again.
    case kill(String), start(String)
    /// Icecast frozen (SIGSTOP) now and let go this long after, while the next steps go on: the
    /// stream stalls, and what the house plays meanwhile comes late, in a burst.
    case stall(Int)
    /// logind's PrepareForSleep(true/false), NetworkManager's state 20/70 on the stand-in system bus.
    case suspend, wake, networkDown, networkUp
    /// The configuration file rewritten and SIGHUP sent.
    case reload(serverDelayMs: Int, onOutputLost: String, keepWarm: Int)
    /// Time passes, ms.
    case wait(Int)

    var description: String {
        switch self {
        case .mpris(let m): return "mpris \(m)"
        case .seek(let ms): return "seek \(ms)"
        case .setPosition(let ms): return "set-position \(ms)"
        case .volume(let p): return "volume \(p)"
        case .shuffle(let on): return "shuffle \(on)"
        case .loop(let s): return "loop \(s)"
        case .house(let m): return "house \(m)"
        case .houseSeek(let ms): return "house-seek \(ms)"
        case .houseVolume(let p): return "house-volume \(p)"
        case .houseMute(let on): return "house-mute \(on)"
        case .houseRepeat(let on): return "house-repeat \(on)"
        case .houseRandom(let on): return "house-random \(on)"
        case .sinkRemove: return "sink-remove"
        case .sinkAdd: return "sink-add"
        case .defaultSink(let s): return "default-sink \(s)"
        case .secondStream: return "second-stream"
        case .kill(let s): return "kill \(s)"
        case .start(let s): return "start \(s)"
        case .stall(let ms): return "stall \(ms)"
        case .suspend: return "suspend"
        case .wake: return "wake"
        case .networkDown: return "network-down"
        case .networkUp: return "network-up"
        case .reload(let d, let lost, let warm): return "reload \(d) \(lost) \(warm)"
        case .wait(let ms): return "wait \(ms)"
        }
    }

    init?(_ line: String) {
        let w = line.split(separator: " ").map(String.init)
        guard let verb = w.first else { return nil }
        let arg = w.count > 1 ? w[1] : ""
        let n = Int(arg), b = Bool(arg)
        switch (verb, w.count) {
        case ("mpris", 2): self = .mpris(arg)
        case ("seek", 2): guard let n else { return nil }; self = .seek(n)
        case ("set-position", 2): guard let n else { return nil }; self = .setPosition(n)
        case ("volume", 2): guard let n else { return nil }; self = .volume(n)
        case ("shuffle", 2): guard let b else { return nil }; self = .shuffle(b)
        case ("loop", 2): self = .loop(arg)
        case ("house", 2): self = .house(arg)
        case ("house-seek", 2): guard let n else { return nil }; self = .houseSeek(n)
        case ("house-volume", 2): guard let n else { return nil }; self = .houseVolume(n)
        case ("house-mute", 2): guard let b else { return nil }; self = .houseMute(b)
        case ("house-repeat", 2): guard let b else { return nil }; self = .houseRepeat(b)
        case ("house-random", 2): guard let b else { return nil }; self = .houseRandom(b)
        case ("sink-remove", 1): self = .sinkRemove
        case ("sink-add", 1): self = .sinkAdd
        case ("default-sink", 2): self = .defaultSink(arg)
        case ("second-stream", 1): self = .secondStream
        case ("kill", 2): self = .kill(arg)
        case ("start", 2): self = .start(arg)
        case ("stall", 2): guard let n else { return nil }; self = .stall(n)
        case ("suspend", 1): self = .suspend
        case ("wake", 1): self = .wake
        case ("network-down", 1): self = .networkDown
        case ("network-up", 1): self = .networkUp
        // keep_warm is the fourth word; walks kept before it had three (the default, 30 s).
        case ("reload", 3), ("reload", 4):
            guard let n, let warm = w.count == 4 ? Int(w[3]) : 30 else { return nil }
            self = .reload(serverDelayMs: n, onOutputLost: w[2], keepWarm: warm)
        case ("wait", 2): guard let n else { return nil }; self = .wait(n)
        default: return nil
        }
    }

    /// A walk as kept in `Walks/`: one step a line; `#` starts a comment.
    static func parse(walk text: String) -> [WalkStep]? {
        var steps: [WalkStep] = []
        for raw in text.split(separator: "\n") {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
            let t = line.trimmingCharacters(in: .whitespaces)
            if t.isEmpty { continue }
            guard let s = WalkStep(t) else { return nil }
            steps.append(s)
        }
        return steps
    }
}

/// SplitMix64: a seeded generator, the same walk for the same seed on every machine.
struct WalkRandom {
    private var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// 0 ..< n
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(max(1, n))) }
    mutating func between(_ lo: Int, _ hi: Int) -> Int { lo + below(hi - lo + 1) }
    mutating func coin() -> Bool { next() & 1 == 1 }
    mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }
}

/// What the generator needs to know of the world to choose steps that make sense (a sink is
/// added back only once removed; a killed service is started again soon).
struct WalkWorldState {
    var sinkLoaded = true
    var defaultIsWalk = false
    var down: Set<String> = []
    var asleep = false
    var networkUp = true
}

extension WalkStep {
    /// The next step of a random walk: mostly what users and the house do, with time passing
    /// between; faults less often, and what was broken is mended within a few steps.
    static func random(_ r: inout WalkRandom, world w: WalkWorldState) -> WalkStep {
        // Mend first, often: an outage that never ends only tests the outage.
        if let s = w.down.first, r.below(3) == 0 { return .start(s) }
        if w.asleep, r.below(2) == 0 { return .wake }
        if !w.networkUp, r.below(2) == 0 { return .networkUp }
        if !w.sinkLoaded, r.below(3) == 0 { return .sinkAdd }
        var choices: [(Int, (inout WalkRandom) -> WalkStep)] = [
            (14, { r in .wait(r.pick([0, 300, 800, 1500, 2500, 4000, 6000])) }),
            (10, { r in .mpris(r.pick(["Play", "Play", "Pause", "PlayPause", "Stop", "Next", "Previous"])) }),
            (2, { r in .seek(r.pick([-10_000, -3000, -500, 500, 3000, 10_000])) }),
            (2, { r in .setPosition(r.between(0, 25) * 1000) }),
            (2, { r in .volume(r.pick([40, 60, 80, 100])) }),
            (1, { r in .shuffle(r.coin()) }),
            (1, { r in .loop(r.pick(["None", "Playlist", "Track"])) }),
            (6, { r in .house(r.pick(["play", "pause", "resume", "stop", "next", "previous"])) }),
            (2, { r in .houseSeek(r.between(0, 25) * 1000) }),
            (2, { r in .houseVolume(r.pick([40, 70, 100])) }),
            (2, { r in .houseMute(r.coin()) }),
            (1, { r in .houseRepeat(r.coin()) }),
            (1, { r in .houseRandom(r.coin()) }),
            (1, { r in .defaultSink(r.pick(["walk", "rig"])) }),
            (1, { r in .secondStream }),
            (1, { r in .stall(r.pick([500, 1500, 3000])) }),
            (1, { r in .reload(serverDelayMs: r.pick([0, 400, 900]), onOutputLost: r.pick(["pause", "pause", "follow"]),
                               keepWarm: r.pick([0, 2, 30])) }),
        ]
        if w.sinkLoaded { choices.append((2, { r in .sinkRemove })) }
        if w.down.isEmpty { choices.append((1, { r in .kill(r.pick(["icecast", "mopidy"])) })) }
        if !w.asleep { choices.append((1, { r in .suspend })) }
        if w.networkUp { choices.append((1, { r in .networkDown })) }
        let total = choices.reduce(0) { $0 + $1.0 }
        var k = r.below(total)
        for (weight, make) in choices {
            if k < weight { return make(&r) }
            k -= weight
        }
        return .wait(1000)
    }
}
