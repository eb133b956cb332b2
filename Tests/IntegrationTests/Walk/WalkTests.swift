import DBus
import Foundation
import MPRIS
import Support
import XCTest

/// Issue #23: random walks over the real rig — what users, the house, the desktop and the
/// machine do, in any order — with the bridge's promises (`WalkInvariants`) checked after every
/// step. Each walk starts a fresh bridge on a sink of its own, paused, with its configuration in
/// a file (for `reload` steps) and logind/NetworkManager on the rig's system bus.
///
/// - `randomWalks`: new seeds each run, walks of `stepsPerWalk`, for `GROOVE_WALK_SECONDS`
///   (default 30 s per sound server); `GROOVE_WALK_SEED` replays one. A failing walk is printed with its seed, then shrunk
///   (for up to `GROOVE_WALK_SHRINK_SECONDS`) to the shortest that still fails, which is printed
///   and written to /tmp to be kept in `Walks/`.
/// - `keptWalks`: every walk in `Walks/` (each once found failing, or written to show a
///   fixed fault) must pass: all on PulseAudio, those whose comment names PipeWire there too.
/// `scripts/walk --minutes N` runs long walks by hand.
class WalkTestCase: DaemonTestCase {
    var system: FakeSystemBus!
    var walkSink: String { "groove_walk_\(getpid())" }
    var configFile: URL { configDir.appendingPathComponent("config") }
    /// Steps of a random walk (`GROOVE_WALK_STEPS`): long enough for faults to meet, short enough
    /// that CI's budget walks several seeds.
    static var stepsPerWalk: Int { Int(environment["GROOVE_WALK_STEPS"] ?? "").map { min(200, max(1, $0)) } ?? 16 }

    override var defaultArguments: [String] {
        ["--rpc-url", rig.info.groove_rpc_url, "--ws-url", rig.info.groove_ws_url,
         "--stream-url", rig.info.stream_url, "--sink", walkSink, "--config", configFile.path]
    }

    override func setUpWithError() throws {
        rig = try Rig.get()
        sound = try rig.sound(Self.soundKind)
        client = try DBusConnection(address: rig.info.bus_address)
        XCTAssertTrue(waitUntil(5) { client.owner(of: MPRISService.busName) == nil }, "a bridge is already on the bus")
        system = try FakeSystemBus(address: rig.info.system_bus_address)
        try FileManager.default.createDirectory(at: configDir, withIntermediateDirectories: true)
    }

    override func tearDown() {
        super.tearDown()
        system?.close()
    }

    static var environment: [String: String] { ProcessInfo.processInfo.environment }

    struct Failure: Error, CustomStringConvertible {
        let step: Int
        let why: String
        var description: String { "after step \(step + 1): \(why)" }
        /// The promise broken, without its figures and titles: a shrink keeps only walks that
        /// break the same one (ddmin would otherwise slip to another fault on the way).
        var kind: String {
            let unquoted = why.split(separator: "'", omittingEmptySubsequences: false).enumerated()
                .filter { $0.offset % 2 == 0 }.map(\.element).joined(separator: " ")
            return unquoted.split(separator: " ").filter { !$0.contains(where: \.isNumber) }.prefix(5).joined(separator: " ")
        }
    }

    /// Totals for the closing line (BENCHMARKS.md keeps them).
    var walks = 0, steps = 0, checks = 0, slowestGetAllUs: Int64 = 0

    /// One walk on a fresh bridge; the failure, or nil when every promise held after every step.
    /// `verbose`: each step is printed; `explain`: a failure is printed with the signals, the
    /// bridge's log and the end of Mopidy's.
    func run(_ walk: [WalkStep], verbose: Bool = false, explain: Bool = false) throws -> Failure? {
        let world = try WalkWorld(rig: rig, sound: sound, client: client, system: system, walkSink: walkSink,
                                  configFile: configFile, daemonPid: { [unowned self] in daemon.processIdentifier })
        defer { world.close() }
        // GROOVE_WALK_LOG=debug: the bridge logs at debug level (what a failure prints).
        let debug = Self.environment["GROOVE_WALK_LOG"] == "debug"
        try startDaemon(debug ? ["--verbose"] : [])
        defer {
            stopDaemon()
            world.mend()
        }
        guard waitUntil(15, { client.owner(of: MPRISService.busName) != nil && (try? playerctl("status")) == "Paused" }) else {
            throw Rig.RigError(message: "the bridge did not come up paused")
        }
        let owner = try XCTUnwrap(client.owner(of: MPRISService.busName))
        let watcher = try SignalWatcher(address: rig.info.bus_address, sender: owner)
        defer { watcher.stop() }
        var recorders = [try Recorder(rig: rig, sound: sound, source: "\(walkSink).monitor"), try Recorder(rig: rig, sound: sound)]
        defer { recorders.forEach { $0.stop() } }
        guard waitUntil(10, { recorders.allSatisfy { $0.count > Recorder.rate / 5 } }) else {
            throw Rig.RigError(message: "the recorders delivered nothing")
        }
        // Settled: the first fetch is in and nothing more is on its way.
        _ = waitUntil(10) {
            let n = watcher.all.count
            usleep(700_000)
            return watcher.all.count == n
        }
        let invariants = try WalkInvariants(world: world, watcher: watcher, recorders: recorders, pid: daemon.processIdentifier)
        invariants.heardDelayMs = { [self] in statusObject()["heard_delay_ms"] as? Int ?? 0 }
        walks += 1
        defer {
            checks += invariants.checks
            slowestGetAllUs = max(slowestGetAllUs, invariants.slowestGetAllUs)
        }
        for (i, step) in walk.enumerated() {
            if verbose { print("walk: step \(i + 1): \(step)") }
            try world.perform(step)
            steps += 1
            if case .defaultSink = step { try Recorder.keepInPlace(recorders, env: world.env) }
            if step == .sinkAdd {
                let r = try Recorder(rig: rig, sound: sound, source: "\(walkSink).monitor")
                recorders.append(r)
                invariants.recorders.append(r)
            }
            usleep(300_000)
            var why: String? = nil
            do { why = try invariants.check() } catch let e as Rig.RigError { why = e.message }
            if let why {
                if verbose || explain || Self.environment["GROOVE_WALK_LOG"] != nil {
                    let signals = watcher.all.map { "  \($0.us / 1000) \($0.member) \($0.args.dropFirst().first.map { "\($0)" } ?? "")" }
                    print("walk: signals:\n" + signals.suffix(30).joined(separator: "\n"))
                    print("walk: the bridge's log:\n" + daemonLog().split(separator: "\n").suffix(debug ? 150 : 40).joined(separator: "\n"))
                    let mopidy = (try? String(contentsOfFile: "\(rig.info.dir)/logs/mopidy.log", encoding: .utf8)) ?? ""
                    print("walk: Mopidy's log ends:\n" + mopidy.split(separator: "\n").suffix(15).joined(separator: "\n"))
                }
                return Failure(step: i, why: why)
            }
        }
        return nil
    }

    /// The shortest walk found that still breaks the promise `kind` names, trying for at most
    /// `seconds`: whole chunks dropped first, then single steps (ddmin's order).
    func shrink(_ walk: [WalkStep], kind: String, seconds: Double) -> [WalkStep] {
        let deadline = monotonicUs() + Int64(seconds * 1_000_000)
        var best = walk
        var chunk = max(1, best.count / 2)
        while chunk >= 1 && monotonicUs() < deadline {
            var i = 0, removed = false
            while i < best.count && monotonicUs() < deadline {
                var candidate = best
                candidate.removeSubrange(i..<min(best.count, i + chunk))
                let f = candidate.isEmpty ? nil : try? run(candidate)
                if let f, f.kind != kind { print("walk: fails otherwise with \(candidate.count) steps, not kept (\(f))") }
                if let f, f.kind == kind {
                    print("walk: still fails with \(candidate.count) steps (\(f))")
                    best = Array(candidate.prefix(f.step + 1))
                    removed = true
                } else {
                    i += chunk
                }
            }
            if !removed { chunk /= 2 }
        }
        return best
    }

    func report(_ walk: [WalkStep], _ f: Failure, seed: UInt64?) {
        let failing = Array(walk.prefix(f.step + 1))
        print("walk FAILED (seed \(seed.map(String.init) ?? "kept"), \(Self.soundKind)) \(f):\n" + failing.map { "  \($0)" }.joined(separator: "\n"))
        let seconds = Double(Self.environment["GROOVE_WALK_SHRINK_SECONDS"] ?? "") ?? 300
        let short = shrink(failing, kind: f.kind, seconds: seconds)
        let text = "# \(Self.soundKind), seed \(seed.map(String.init) ?? "kept"): \(f.why)\n" + short.map { "\($0)\n" }.joined()
        let file = "/tmp/groove-walk-\(seed ?? 0)-\(Self.soundKind).walk"
        try? text.write(toFile: file, atomically: true, encoding: .utf8)
        print("walk: shortest failing walk (\(short.count) steps), kept in \(file):\n" + text)
    }

    func randomWalks() throws {
        let budget = Double(Self.environment["GROOVE_WALK_SECONDS"] ?? "") ?? 30
        let end = monotonicUs() + Int64(budget * 1_000_000)
        var seeds: [UInt64] = []
        if let s = Self.environment["GROOVE_WALK_SEED"].flatMap(UInt64.init) { seeds = [s] }
        repeat {
            let seed = seeds.isEmpty ? UInt64.random(in: 1...UInt64.max >> 1) : seeds.removeFirst()
            var r = WalkRandom(seed: seed)
            var world = WalkWorldState()
            var walk: [WalkStep] = []
            for _ in 0..<Self.stepsPerWalk {
                let s = WalkStep.random(&r, world: world)
                walk.append(s)
                world.apply(s)
            }
            print("walk: seed \(seed) on \(Self.soundKind), \(walk.count) steps")
            if let f = try run(walk, verbose: Self.environment["GROOVE_WALK_VERBOSE"] != nil, explain: true) {
                report(walk, f, seed: seed)
                XCTFail("walk with seed \(seed) on \(Self.soundKind) broke a promise \(f)")
                break
            }
        } while monotonicUs() < end && Self.environment["GROOVE_WALK_SEED"] == nil
        print("walks on \(Self.soundKind): \(walks) walks, \(steps) steps, \(checks) checks, slowest GetAll \(slowestGetAllUs / 1000) ms")
        XCTAssertGreaterThan(steps, 0)
    }

    func keptWalks() throws {
        let dir = Rig.projectRoot.appendingPathComponent("Tests/IntegrationTests/Walks")
        // `GROOVE_WALK_KEPT=part` replays only the kept walks whose file name contains it.
        let only = Self.environment["GROOVE_WALK_KEPT"] ?? ""
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path)
            .filter { $0.hasSuffix(".walk") && (only.isEmpty || $0.contains(only)) }.sorted()
        XCTAssertFalse(files.isEmpty, "no kept walks in \(dir.path)")
        for name in files {
            let text = try String(contentsOf: dir.appendingPathComponent(name), encoding: .utf8)
            // Every kept walk runs on PulseAudio; on PipeWire those that name it (CI's time).
            if Self.soundKind == "pipewire" && !text.contains("PipeWire") { continue }
            let walk = try XCTUnwrap(WalkStep.parse(walk: text), "\(name) does not parse")
            print("walk: kept \(name), \(walk.count) steps")
            if let f = try run(walk, verbose: true, explain: true) {
                XCTFail("kept walk \(name) on \(Self.soundKind) broke a promise \(f)")
            }
        }
        print("kept walks on \(Self.soundKind): \(walks) walks, \(steps) steps, \(checks) checks")
    }
}

final class WalkTests: WalkTestCase {
    func testRandomWalks() throws { try randomWalks() }
    func testKeptWalks() throws { try keptWalks() }
}

final class PipeWireWalkTests: WalkTestCase {
    override class var soundKind: String { "pipewire" }

    func testRandomWalks() throws { try randomWalks() }
    func testKeptWalks() throws { try keptWalks() }
}

extension WalkWorldState {
    /// The generator's view of what a step does (the world's own `perform` is the truth).
    mutating func apply(_ s: WalkStep) {
        switch s {
        case .sinkRemove: sinkLoaded = false; defaultIsWalk = false
        case .sinkAdd: sinkLoaded = true
        case .defaultSink(let w): defaultIsWalk = w == "walk" && sinkLoaded
        case .kill(let n): down.insert(n)
        case .start(let n): down.remove(n)
        case .suspend: asleep = true
        case .wake: asleep = false
        case .mpris(let m): if m == "Play" || m == "PlayPause" { asleep = false }
        case .networkDown: networkUp = false
        case .networkUp: networkUp = true
        default: break
        }
    }
}
