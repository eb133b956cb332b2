import DBus
import Foundation
import MPRIS
import XCTest

/// What the bridge's children inherit, seen from inside them: the password command (at start and
/// on a reload) and systemd-run for Raise (with no portal on the bus) are scripts that record their environment, their open fds
/// and their signal mask and ignored signals, while the bridge plays the rig's stream (so its
/// libcurl sockets are open).
final class ChildProcessTests: XCTestCase {
    var rig: Rig!
    var daemon: Process?
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("groove-children-\(getpid())")

    override func setUpWithError() throws {
        rig = try Rig.get()
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("bin"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("records"), withIntermediateDirectories: true)
    }

    override func tearDown() {
        if let daemon, daemon.isRunning {
            daemon.terminate()
            daemon.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: dir)
    }

    /// A bash script that records what it was given under records/`name`.<pid>, then runs `then`.
    /// `ls` and `grep` report what they inherited from the script, which is what the script got.
    /// (bash, because dash clears its signal mask as it starts: the password command, run by
    /// `sh -c`, therefore shows only what dash passes on, and xdg-open, started directly, shows
    /// the mask the bridge gave it.)
    func recorder(_ name: String, then: String) throws -> String {
        let path = dir.appendingPathComponent("bin/\(name)").path
        let records = dir.appendingPathComponent("records").path
        try """
            #!/bin/bash
            d=\(records)/\(name).$$
            mkdir "$d"
            env > "$d/env"
            ls -l /proc/self/fd > "$d/fds"
            grep -E '^Sig(Blk|Ign):' /proc/self/status > "$d/signals"
            echo "$@" > "$d/args"
            \(then)

            """.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o755)
        return path
    }

    struct Record {
        let env: [String]
        let fds: [Int]
        let signals: [String]
        let args: String
    }

    func records(_ name: String) throws -> [Record] {
        let base = dir.appendingPathComponent("records")
        return try FileManager.default.contentsOfDirectory(atPath: base.path).filter { $0.hasPrefix(name + ".") }.sorted()
            .map { run in
                func read(_ f: String) throws -> String {
                    try String(contentsOf: base.appendingPathComponent("\(run)/\(f)"), encoding: .utf8)
                }
                // `ls -l` lines end "N -> target"; the directory ls itself opened to list is not inherited.
                let fds = try read("fds").split(separator: "\n").compactMap { line -> Int? in
                    let parts = line.components(separatedBy: " -> ")
                    guard parts.count == 2, !(parts[1].hasPrefix("/proc/") && parts[1].hasSuffix("/fd")) else { return nil }
                    return Int(parts[0].split(separator: " ").last ?? "")
                }
                return Record(env: try read("env").split(separator: "\n").map(String.init), fds: fds.sorted(),
                              signals: try read("signals").split(separator: "\n").map(String.init),
                              args: try read("args").trimmingCharacters(in: .whitespacesAndNewlines))
            }
    }

    func assertClean(_ r: Record, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(r.fds, [0, 1, 2], "\(what) inherited fds", file: file, line: line)
        // Nothing blocked; nothing ignored but signals 32 and 33, glibc's own (SIGCANCEL, SIGSETXID):
        // its posix_spawn ignores them in every child (they have handlers in the parent whose
        // memory the child shares until exec), and no attribute can change that.
        XCTAssertEqual(r.signals, ["SigBlk:\t0000000000000000", "SigIgn:\t0000000180000000"], what, file: file, line: line)
        XCTAssertFalse(r.env.contains { $0.hasPrefix("GROOVE_PASSWORD=") || $0.hasPrefix("PULSE_PROP_") }, "\(what): \(r.env)",
                       file: file, line: line)
        XCTAssertFalse(r.env.contains { $0.contains(rig.info.password) }, "\(what) sees the password", file: file, line: line)
        XCTAssertTrue(r.env.contains("GROOVE_TEST_MARK=kept"), "\(what) lost the rest of the environment", file: file, line: line)
    }

    /// Every fd the bridge holds above 2 is close-on-exec (fdinfo's flags, octal, hold O_CLOEXEC).
    func fdsWithoutCloseOnExec(_ pid: Int32) throws -> [String] {
        let fdDir = "/proc/\(pid)/fd"
        return try FileManager.default.contentsOfDirectory(atPath: fdDir).compactMap { fd -> String? in
            guard let n = Int(fd), n > 2,
                  let info = try? String(contentsOfFile: "/proc/\(pid)/fdinfo/\(fd)", encoding: .utf8),
                  let flags = info.split(separator: "\n").first(where: { $0.hasPrefix("flags:") })?.split(separator: "\t").last,
                  let value = Int(flags, radix: 8) else { return nil }
            let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "\(fdDir)/\(fd)")) ?? "?"
            return value & 0o2000000 == 0 ? "\(fd) -> \(target)" : nil
        }
    }

    /// A runtime folder with the socket a user service manager listens on (`systemd/private`),
    /// which is what makes the bridge offer Raise through systemd-run.
    func userManagerSocketDir() throws -> URL {
        let runtime = dir.appendingPathComponent("runtime")
        try FileManager.default.createDirectory(at: runtime.appendingPathComponent("systemd"), withIntermediateDirectories: true)
        let bound = try runCommand(["/usr/bin/python3", "-c", "import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])",
                                    runtime.appendingPathComponent("systemd/private").path], timeout: 10)
        guard bound.status == 0 else { throw Rig.RigError(message: "cannot make the manager's socket: \(bound.err)") }
        return runtime
    }

    func testChildrenGetOnlyTheirFdsADefaultSignalStateAndNoPassword() throws {
        let password = try recorder("password", then: "echo '\(rig.info.password)'")
        _ = try recorder("systemd-run", then: "exit 0")
        var env = rig.clientEnvironment
        // Empty: the password comes from the command, and the variable must not reach children.
        env["GROOVE_PASSWORD"] = ""
        env["GROOVE_TEST_MARK"] = "kept"
        env["XDG_CONFIG_HOME"] = dir.appendingPathComponent("config").path
        env["XDG_CACHE_HOME"] = dir.appendingPathComponent("cache").path
        env["PATH"] = dir.appendingPathComponent("bin").path + ":" + (env["PATH"] ?? "/usr/bin:/bin")
        env["XDG_RUNTIME_DIR"] = try userManagerSocketDir().path
        let bus = try DBusConnection(address: rig.info.bus_address)
        XCTAssertTrue(waitUntil(5) { bus.owner(of: MPRISService.busName) == nil }, "a bridge is already on the bus")
        let p = Process()
        p.executableURL = BridgeTests.binary
        p.arguments = ["--rpc-url", rig.info.groove_rpc_url, "--ws-url", rig.info.groove_ws_url,
                       "--stream-url", rig.info.stream_url, "--sink", rig.info.sink, "--autoplay",
                       "--password-command", password]
        p.environment = env
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        daemon = p
        let status = { (try? runCommand([BridgeTests.binary.path, "status", "--json"], env: self.rig.clientEnvironment).out) ?? "" }
        let name = MPRISService.busName
        XCTAssertTrue(waitUntil(15) { bus.owner(of: name) != nil }, "the bridge is not on the bus")
        // Playing the stream, following the events: its libcurl sockets are open.
        XCTAssertTrue(waitUntil(15) {
            let s = status()
            return s.contains("\"stream\":\"playing\"") && s.contains("\"events\":\"connected\"")
        }, "not playing: \(status())")

        // The stream, the events, the kept-alive RPC connection: none may reach a child.
        XCTAssertEqual(try fdsWithoutCloseOnExec(p.processIdentifier), [], "fds a child would inherit")

        kill(p.processIdentifier, SIGHUP)
        XCTAssertTrue(waitUntil(10) { ((try? records("password")) ?? []).count == 2 }, "the reload did not run the password command")
        _ = try bus.call(destination: name, path: MPRISInterface.objectPath, interface: MPRISInterface.root, member: "Raise")
        XCTAssertTrue(waitUntil(10) { ((try? records("systemd-run")) ?? []).count == 1 }, "Raise did not start systemd-run")

        let runs = try records("password")
        assertClean(runs[0], "the password command at start")
        assertClean(runs[1], "the password command on reload")
        let opened = try records("systemd-run")[0]
        assertClean(opened, "systemd-run")
        XCTAssertTrue(opened.args.hasPrefix("--user --collect --quiet xdg-open http://127.0.0.1:"), opened.args)
        XCTAssertTrue(p.isRunning)
    }
}
