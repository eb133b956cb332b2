import DBus
import Foundation
import Mopidy
import MPRIS
import Support
import Synchronization
import XCTest

/// A running groove-bridge binary against the rig's Mopidy (Groove URL layout, through nginx), on
/// the rig's bus, playing into the rig's sink: the set-up and helpers of the tests that drive it.
class DaemonTestCase: XCTestCase {
    /// The sound server the bridge plays to: the rig's own, or another it starts beside it.
    class var soundKind: String { "pulseaudio" }
    var rig: Rig!
    var sound: Rig.Sound!
    var daemon: Process!
    /// The daemon's output, read as it comes: a pipe nobody drained would fill (64 KiB) and block
    /// the daemon on its next log line, and then on its way out.
    var output: ScreenReader?
    var client: DBusConnection!

    static var binary: URL { Rig.projectRoot.appendingPathComponent(".build/debug/groove-bridge") }

    var recorder: Recorder?
    let configDir = FileManager.default.temporaryDirectory.appendingPathComponent("groove-bridge-cfg-\(getpid())")

    override func setUpWithError() throws {
        rig = try Rig.get()
        sound = try rig.sound(Self.soundKind)
        client = try DBusConnection(address: rig.info.bus_address)
        XCTAssertTrue(waitUntil(5) { client.owner(of: MPRISService.busName) == nil }, "a bridge is already on the bus")
        try FileManager.default.createDirectory(at: configDir, withIntermediateDirectories: true)
        try startDaemon()
        XCTAssertTrue(waitUntil(10) { (try? playerctl("status")) == "Playing" }, "bridge did not come up playing")
    }

    /// The environment a desktop session gives the bridge, with the password where the user
    /// chose to put it (GROOVE_PASSWORD here).
    var daemonEnvironment: [String: String] {
        var env = rig.clientEnvironment(sound)
        env["GROOVE_PASSWORD"] = rig.info.password
        env["XDG_CONFIG_HOME"] = configDir.path
        env["XDG_CACHE_HOME"] = configDir.appendingPathComponent("cache").path
        // The rig's own system bus, never the machine's: logind and NetworkManager are there
        // only when a test puts them there.
        env["DBUS_SYSTEM_BUS_ADDRESS"] = rig.info.system_bus_address
        return env
    }

    var defaultArguments: [String] {
        ["--rpc-url", rig.info.groove_rpc_url, "--ws-url", rig.info.groove_ws_url,
         "--stream-url", rig.info.stream_url, "--sink", rig.info.sink, "--autoplay"]
    }

    /// What the daemon is started through, ahead of its own path (a sandbox, in SandboxTests);
    /// it must exec the daemon in place, so that the pid and signals are the daemon's.
    var launcher: [String] { [] }

    func startDaemon(_ extra: [String] = [], environment: [String: String]? = nil) throws {
        let p = Process()
        let argv = launcher + [DaemonTestCase.binary.path] + defaultArguments + extra
        p.executableURL = URL(fileURLWithPath: argv[0])
        p.arguments = Array(argv.dropFirst())
        p.environment = environment ?? daemonEnvironment
        let log = Pipe()
        p.standardError = log
        p.standardOutput = log
        try p.run()
        daemon = p
        output = ScreenReader(log.fileHandleForReading)
        // This process's copy of the write end: the reader sees the end once the daemon is gone.
        try? log.fileHandleForWriting.close()
    }

    /// Restarts the daemon with its password in a configuration file (mode 600, with the stream
    /// URL and `extra` lines) and not in GROOVE_PASSWORD; returns how to rewrite that password.
    func restartWithPasswordInFile(_ password: String, extra: String = "") throws -> (String) throws -> Void {
        stopDaemon()
        XCTAssertTrue(waitUntil(3) { client.owner(of: MPRISService.busName) == nil })
        let cfg = configDir.appendingPathComponent("config")
        let write = { [rig] (pw: String) throws in
            try "stream_url = \(rig!.info.stream_url)\n\(extra)password = \(pw)\n".write(to: cfg, atomically: true, encoding: .utf8)
            chmod(cfg.path, 0o600)
        }
        try write(password)
        var env = daemonEnvironment
        env.removeValue(forKey: "GROOVE_PASSWORD")
        try startDaemon(["--config", cfg.path], environment: env)
        return write
    }

    /// Stops the daemon, if it runs, with SIGTERM, and checks that it was an ordinary stop: exit
    /// code 0, never a crash on the way out.
    func stopDaemon(file: StaticString = #filePath, line: UInt = #line) {
        guard let daemon, daemon.isRunning else { return }
        daemon.terminate()
        guard let end = daemon.waitForExit(timeoutS: 30) else {
            XCTFail("the bridge did not stop within 30 s of SIGTERM", file: file, line: line)
            kill(daemon.processIdentifier, SIGKILL)
            return
        }
        XCTAssertTrue(end.exited, "the bridge died of signal \(end.code) when stopped", file: file, line: line)
        XCTAssertEqual(end.code, 0, "the bridge stopped with exit code \(end.code)", file: file, line: line)
    }

    override func tearDown() {
        stopDaemon()
        daemon = nil
        recorder?.stop()
        // No rig when it could not start: the error from setUp is the one to read, not a crash.
        _ = try? rig?.rpc("core.playback.play")
        try? FileManager.default.removeItem(at: configDir)
    }

    /// Everything the daemon logged (it is stopped first, and its output read to the end).
    func daemonLog() -> String {
        stopDaemon()
        _ = output?.waitForEnd(timeout: 10)
        return output?.text ?? ""
    }

    @discardableResult
    func playerctl(_ args: String...) throws -> String {
        let r = try runCommand(["playerctl", "-p", "groove"] + args, env: rig.clientEnvironment, timeout: 10)
        guard r.status == 0 else { throw Rig.RigError(message: "playerctl \(args): \(r.err)") }
        return r.out.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func mopidyTrack() throws -> [String: Any] {
        let tl = try rig.rpc("core.playback.get_current_tl_track") as? [String: Any]
        return tl?["track"] as? [String: Any] ?? [:]
    }

    func expectedTone() throws -> Int {
        try XCTUnwrap(rig.track(titled: try rig.currentTitle() ?? "")?.freq)
    }

    /// Calls GetAll every `everyMs` for `seconds` and returns the slowest round trip, µs.
    func slowestGetAllUs(seconds: Double, everyMs: UInt32) throws -> Int64 {
        var worst: Int64 = 0
        let end = monotonicMs() + Int(seconds * 1000)
        while monotonicMs() < end {
            let t0 = monotonicUs()
            _ = try client.call(destination: MPRISService.busName, path: MPRISInterface.objectPath,
                                interface: MPRISInterface.properties, member: "GetAll", args: [.string(MPRISInterface.player)])
            worst = max(worst, monotonicUs() - t0)
            usleep(everyMs * 1000)
        }
        return worst
    }

    func status() -> String {
        (try? runCommand([DaemonTestCase.binary.path, "status", "--json"], env: rig.clientEnvironment).out) ?? ""
    }
}
