import DBus
import Foundation
import Support
import XCTest

/// The test rig: a real Groove Audio server on loopback (scripts/rig.py), started once per test
/// process on first use and stopped when the process exits. rig.py also stops everything by pid
/// when this process dies in any other way (it watches its owner; its children have
/// PR_SET_PDEATHSIG).
final class Rig: @unchecked Sendable {
    struct Info: Decodable {
        let dir: String
        let password: String
        let user: String
        let stream_url: String
        let native_stream_url: String
        let nginx_stream_url: String
        /// The Groove layout over TLS, with a certificate from a CA made for the run (`ca_file`).
        let tls_stream_url: String
        let tls_rpc_url: String
        let tls_ws_url: String
        let ca_file: String
        /// The route tests' pair of front ends: home (plain HTTP, stopped to leave home) and
        /// remote (TLS with the same CA).
        let home_stream_url: String
        let home_rpc_url: String
        let home_ws_url: String
        let remote_stream_url: String
        let remote_rpc_url: String
        let remote_ws_url: String
        /// A second dbus-daemon of type system, where a test may own logind's and
        /// NetworkManager's names.
        let system_bus_address: String
        /// Mopidy's m3u playlists folder.
        let playlists_dir: String
        let groove_rpc_url: String
        let groove_ws_url: String
        let mopidy_rpc_url: String
        let mopidy_ws_url: String
        let bus_address: String
        let pulse_server: String
        let pulse_runtime: String
        let sink: String
        let monitor: String
        let tracks: [TrackInfo]
        let track_seconds: Int
        let ports: [String: Int]
        /// The sound server every client of the rig is pointed at (`pulse_server` above).
        let sound: String
    }

    /// A sound server of the rig: where its clients connect, and its null sink.
    struct Sound: Decodable {
        let kind: String
        let pulse_server: String
        let pulse_runtime: String
        let sink: String
        let monitor: String
    }

    /// The rig's sound server `kind` ("pulseaudio" or "pipewire"), started on first use beside
    /// the one it began with.
    func sound(_ kind: String) throws -> Sound {
        let reply = try command(["cmd": "sound", "name": kind])
        return try JSONDecoder().decode(Sound.self, from: JSONSerialization.data(withJSONObject: reply ?? [:]))
    }

    struct TrackInfo: Decodable {
        let title: String
        let artists: [String]
        let album: String
        let albumartist: String
        let freq: Int
        let track: Int
        let disc: Int
        let genre: String
        let date: String
    }

    let info: Info
    private let process: Process
    private let input: FileHandle
    private let output: LineReader
    private let lock = NSLock()

    static let projectRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    nonisolated(unsafe) private static var shared: Rig?
    nonisolated(unsafe) private static var startError: String?
    private static let sharedLock = NSLock()

    /// The rig for this test process; fails the test (never skips) when it cannot start.
    static func get(file: StaticString = #filePath, line: UInt = #line) throws -> Rig {
        sharedLock.lock()
        defer { sharedLock.unlock() }
        if let shared { return shared }
        if let startError { throw RigError(message: startError) }
        do {
            try requireTools()
            let rig = try Rig()
            shared = rig
            atexit { Rig.shared?.shutdown() }
            return rig
        } catch {
            startError = "\(error)"
            throw error
        }
    }

    struct RigError: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }

    /// Every tool the rig and the tests run. Missing ones are a failure, named, not a skip:
    /// `scripts/setup` installs them all.
    static let requiredTools = ["python3", "dbus-daemon", "pulseaudio", "pipewire", "wireplumber", "pipewire-pulse",
                                "pactl", "parec", "icecast2",
                                "mopidy", "gst-launch-1.0", "ffmpeg", "nginx", "sox", "metaflac",
                                "playerctl", "playerctld", "gdbus", "dbus-send", "curl", "desktop-file-validate", "openssl"]

    static func requireTools(_ tools: [String] = requiredTools) throws {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let dirs = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin"]
        let missing = tools.filter { tool in
            !dirs.contains { FileManager.default.isExecutableFile(atPath: "\($0)/\(tool)") }
        }
        if !missing.isEmpty {
            throw RigError(message: "test rig needs \(missing.joined(separator: ", ")); run scripts/setup")
        }
    }

    private init() throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", Rig.projectRoot.appendingPathComponent("scripts/rig.py").path,
                       "serve", "--owner", String(getpid())]
        let inPipe = Pipe(), outPipe = Pipe()
        p.standardInput = inPipe
        p.standardOutput = outPipe
        let logURL = FileManager.default.temporaryDirectory.appendingPathComponent("groove-rig-\(getpid()).log")
        _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)
        p.standardError = try FileHandle(forWritingTo: logURL)
        try p.run()
        process = p
        input = inPipe.fileHandleForWriting
        output = LineReader(outPipe.fileHandleForReading)
        guard let first = output.readLine(timeout: 120) else {
            p.terminate()
            throw RigError(message: "rig did not start within 120 s; see \(logURL.path)")
        }
        if let err = try? JSONDecoder().decode([String: String].self, from: Data(first.utf8)), let e = err["error"] {
            throw RigError(message: "rig failed to start: \(e); see \(logURL.path)")
        }
        info = try JSONDecoder().decode(Info.self, from: Data(first.utf8))
    }

    func shutdown() {
        try? input.close()
        waitUntil(10) { !process.isRunning }
        if process.isRunning { process.terminate() }
    }

    /// Sends one command to rig.py and returns its `ok` payload.
    @discardableResult
    func command(_ cmd: [String: Any]) throws -> Any? {
        lock.lock()
        defer { lock.unlock() }
        let data = try JSONSerialization.data(withJSONObject: cmd)
        input.write(data + Data("\n".utf8))
        guard let line = output.readLine(timeout: 60) else { throw RigError(message: "rig did not answer \(cmd)") }
        let reply = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] ?? [:]
        if let e = reply["error"] { throw RigError(message: "rig: \(e)") }
        return reply["ok"]
    }

    /// A Mopidy JSON-RPC call made by the rig itself (an independent client).
    @discardableResult
    func rpc(_ method: String, _ params: [String: Any] = [:]) throws -> Any? {
        try command(["cmd": "rpc", "method": method, "params": params])
    }

    func stop(_ service: String, signal: String = "TERM") throws {
        try command(["cmd": "stop", "name": service, "signal": signal])
    }

    /// Starts a service; returns when it accepted (monotonic µs, the clock of `monotonicUs()`).
    @discardableResult
    func start(_ service: String) throws -> Int64 {
        let reply = try command(["cmd": "start", "name": service]) as? [String: Any]
        return Int64(((reply?["ready_at"] as? Double) ?? 0) * 1_000_000)
    }

    /// Waits until Icecast takes listeners on `mount` again (its source reconnected); returns
    /// when (monotonic µs), polled every 10 ms.
    func waitLive(_ mount: String = "/stream.flac", timeout: Double = 20) throws -> Int64 {
        let reply = try command(["cmd": "wait_live", "mount": mount, "timeout": timeout]) as? [String: Any]
        return Int64(((reply?["live_at"] as? Double) ?? 0) * 1_000_000)
    }

    /// Sends `sig` to the rig's `service`; its pid.
    @discardableResult
    func signal(_ service: String, _ sig: String) throws -> Int32? {
        let reply = try command(["cmd": "signal", "name": service, "signal": sig]) as? [String: Any]
        return (reply?["pid"] as? Int).map { Int32(truncatingIfNeeded: $0) }
    }

    /// The environment for a client of the rig's bus and sound server.
    var clientEnvironment: [String: String] { clientEnvironment(nil) }

    /// The same, playing to `sound` (nil: the rig's own).
    func clientEnvironment(_ sound: Sound?) -> [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["DBUS_SESSION_BUS_ADDRESS"] = info.bus_address
        env["PULSE_SERVER"] = sound?.pulse_server ?? info.pulse_server
        env["XDG_RUNTIME_DIR"] = sound?.pulse_runtime ?? info.pulse_runtime
        env.removeValue(forKey: "DISPLAY")
        env.removeValue(forKey: "WAYLAND_DISPLAY")
        return env
    }

    /// The track the rig's Mopidy plays now, by an independent RPC call.
    func currentTitle() throws -> String? {
        let tl = try rpc("core.playback.get_current_tl_track") as? [String: Any]
        return (tl?["track"] as? [String: Any])?["name"] as? String
    }

    func track(titled title: String) -> TrackInfo? { info.tracks.first { $0.title == title } }
}

/// Reads lines from a pipe with a timeout, on a background thread.
final class LineReader: @unchecked Sendable {
    private var lines: [String] = []
    private var buffer = Data()
    private var eof = false
    /// Its condition waits on the monotonic clock.
    private let cond = Monitor()

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            while true {
                let chunk = handle.availableData
                let ended = cond.withLock { () -> Bool in
                    if chunk.isEmpty {
                        eof = true
                        return true
                    }
                    buffer.append(chunk)
                    while let nl = buffer.firstIndex(of: 10) {
                        lines.append(String(decoding: buffer[buffer.startIndex..<nl], as: UTF8.self))
                        buffer.removeSubrange(buffer.startIndex...nl)
                    }
                    return false
                }
                cond.broadcast()
                if ended { return }
            }
        }
    }

    func readLine(timeout: TimeInterval) -> String? {
        let deadline = monotonicMs() + Int(timeout * 1000)
        return cond.withLock {
            while lines.isEmpty && !eof && monotonicMs() < deadline { cond.wait(deadlineMs: deadline) }
            return lines.isEmpty ? nil : lines.removeFirst()
        }
    }
}

/// The bound on one D-Bus round trip to the bridge in tests. What it protects: the D-Bus thread
/// never waits on the network or on Mopidy; a call that did would take the RPC timeout (5 s,
/// `HTTPTimeouts`) or the stream's connect timeout (3 s). A loaded 2-core machine stalls a round
/// trip for some hundred ms at worst, so 1 s holds there and still tells a wait on the network.
/// How fast the answers really are is a benchmark's figure (BENCHMARKS.md: HostileBusTests'
/// GetAll p50 0.59 ms, p99 1.68 ms), printed by the tests, not asserted.
let answerBoundUs: Int64 = 1_000_000

/// Waits until `condition` holds, checking every 10 ms, for at most `timeout` seconds of the
/// monotonic clock (a wall clock set back or forward neither stretches nor cuts the wait).
@discardableResult
func waitUntil(_ timeout: TimeInterval, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = monotonicMs() + Int(timeout * 1000)
    repeat {
        if try condition() { return true }
        usleep(10_000)
    } while monotonicMs() < deadline
    return try condition()
}

/// A connection to a dbus-daemon just started at `address`, once it accepts one: its socket's
/// file exists a moment before it listens (longer on a loaded machine). Nil after `timeout`.
func connectWhenUp(_ address: String, timeout: TimeInterval = 10) -> DBusConnection? {
    var accepted: DBusConnection? = nil
    _ = waitUntil(timeout) {
        accepted = try? DBusConnection(address: address)
        return accepted != nil
    }
    return accepted
}

/// Runs a command to completion; returns exit status, stdout and stderr.
@discardableResult
func runCommand(_ argv: [String], env: [String: String]? = nil, stdin: String? = nil, timeout: TimeInterval = 30)
    throws -> (status: Int32, out: String, err: String, bytes: [UInt8])
{
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = argv
    if let env { p.environment = env }
    let out = Pipe(), err = Pipe(), inp = Pipe()
    p.standardOutput = out
    p.standardError = err
    p.standardInput = inp
    try p.run()
    if let stdin { inp.fileHandleForWriting.write(Data(stdin.utf8)) }
    try? inp.fileHandleForWriting.close()
    final class Collected: @unchecked Sendable { var out = Data(), err = Data() }
    let c = Collected()
    let group = DispatchGroup()
    group.enter()
    DispatchQueue.global().async { c.out = out.fileHandleForReading.readDataToEndOfFile(); group.leave() }
    group.enter()
    DispatchQueue.global().async { c.err = err.fileHandleForReading.readDataToEndOfFile(); group.leave() }
    if group.wait(timeout: .now() + timeout) == .timedOut {
        p.terminate()
        // Something it started may still hold its output: the wait ends either way.
        if group.wait(timeout: .now() + 5) == .timedOut {
            kill(p.processIdentifier, SIGKILL)
            let end = p.waitForExit(timeoutS: 10)
            return (end?.code ?? -1, "", "(its output is still held open by a process it started)", [])
        }
    }
    // Its output ended: it has ended or soon will (SIGKILL after `timeout` more).
    var end = p.waitForExit(timeoutS: timeout)
    if end == nil {
        kill(p.processIdentifier, SIGKILL)
        end = p.waitForExit(timeoutS: 10)
    }
    let outData = c.out, errData = c.err
    return (end?.code ?? -1, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self), [UInt8](outData))
}
