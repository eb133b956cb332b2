import DBus
import Foundation
import MPRIS
import Support
import Synchronization
import XCTest

/// The restrictions of the bridge's systemd user unit, applied without a service manager (CI has
/// none): Tests/Fixtures/sandbox-launch reads desktop/groove-bridge.service.in, loads its
/// system-call allow-list, address families, W^X and the rest as one seccomp filter with
/// no_new_privs, and execs the bridge in place. A call the filter refuses is answered as systemd
/// would and written to a file, named; every test here fails on any line in it.
enum Sandbox {
    static let unit = Rig.projectRoot.appendingPathComponent("desktop/groove-bridge.service.in")
    static let launcher = Rig.projectRoot.appendingPathComponent("Tests/Fixtures/sandbox-launch")

    /// The launcher's needs: systemd-analyze (the groups' members) and python3-seccomp.
    static func require() throws {
        try Rig.requireTools(["systemd-analyze"])
        let r = try runCommand(["/usr/bin/python3", "-c", "import seccomp"], timeout: 10)
        guard r.status == 0 else { throw Rig.RigError(message: "the sandbox needs python3-seccomp (scripts/setup): \(r.err)") }
    }

    static func prefix(denials: URL) -> [String] { [launcher.path, unit.path, denials.path, "--"] }

    /// The calls refused so far, one line each ("name(args) by comm[pid] denied").
    static func denied(_ file: URL) -> String { (try? String(contentsOf: file, encoding: .utf8)) ?? "" }

    /// Fails unless `pid` is the bridge (the launcher has exec'd it) and runs under a seccomp
    /// filter with no_new_privs.
    static func assertConfined(_ pid: Int32, file: StaticString = #filePath, line: UInt = #line) {
        let status = { (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? "" }
        XCTAssertTrue(waitUntil(10) { status().hasPrefix("Name:\tgroove-bridge\n") }, "not the bridge: \(status())",
                      file: file, line: line)
        XCTAssertTrue(status().contains("\nSeccomp:\t2\n"), "no seccomp filter on the bridge", file: file, line: line)
        XCTAssertTrue(status().contains("\nNoNewPrivs:\t1\n"), "no no_new_privs on the bridge", file: file, line: line)
    }
}

/// The desktop portal's OpenURI as far as Raise uses it: this test process owns
/// org.freedesktop.portal.Desktop on the rig's bus and keeps every URI it is asked to open.
final class FakePortal: DBusObject, @unchecked Sendable {
    static let name = "org.freedesktop.portal.Desktop"
    let uris = Mutex<[String]>([])
    private let connection: DBusConnection

    init(address: String) throws {
        connection = try DBusConnection(address: address)
        guard try connection.requestName(FakePortal.name) == .primaryOwner else {
            throw Rig.RigError(message: "\(FakePortal.name) is taken on the rig's bus")
        }
        connection.register(path: "/org/freedesktop/portal/desktop", object: self)
        connection.start(onDisconnect: {})
    }

    func close() { connection.stop(waitMs: 1000) }

    func handle(_ call: MethodCall) -> MethodReply {
        guard call.interface == "org.freedesktop.portal.OpenURI", call.member == "OpenURI", call.signature == "ssa{sv}",
              let uri = call.args[1].stringValue else {
            return .error(name: "org.freedesktop.DBus.Error.UnknownMethod", message: "only OpenURI(ssa{sv}) is faked")
        }
        let n = uris.withLock { $0.append(uri); return $0.count }
        return .values([.objectPath(ObjectPath("/org/freedesktop/portal/desktop/request/1_\(n)/groove")!)])
    }
}

/// A whole listening run of the sandboxed bridge, with logind and NetworkManager on the rig's
/// system bus and the desktop portal on its session bus.
class SandboxedRunTestCase: SystemBusTestCase {
    var portal: FakePortal!
    let denials = FileManager.default.temporaryDirectory.appendingPathComponent("groove-sandbox-denials-\(getpid())")
    override var launcher: [String] { Sandbox.prefix(denials: denials) }

    override func setUpWithError() throws {
        try Sandbox.require()
        try? FileManager.default.removeItem(at: denials)
        rig = try Rig.get()
        portal = try FakePortal(address: rig.info.bus_address)
        try super.setUpWithError()
        recorder?.stop()
        recorder = try Recorder(rig: rig, sound: sound)
    }

    override func tearDown() {
        super.tearDown()
        portal?.close()
        let refused = Sandbox.denied(denials)
        XCTAssertEqual(refused, "", "calls the unit's system-call filter refused:\n\(refused)")
        try? FileManager.default.removeItem(at: denials)
    }

    var tonesHere: [Int] { rig.info.tracks.map(\.freq) }

    /// What Raise opens: the RPC URL's scheme, host and port.
    var webBase: String {
        let u = URL(string: rig.info.groove_rpc_url)
        return "\(u?.scheme ?? "?")://\(u?.host ?? "?"):\(u?.port ?? 0)"
    }

    func music(within seconds: Double) throws -> Bool {
        recorder!.waitForTone(try expectedTone(), candidates: tonesHere, timeout: seconds) != nil
    }

    func listeningRun() throws {
        var logged = try XCTUnwrap(output)
        Sandbox.assertConfined(daemon.processIdentifier)
        XCTAssertTrue(try music(within: 15), "no music at start: \(status())")

        // Pause, Play, Next, volume.
        try playerctl("pause")
        XCTAssertTrue(waitUntil(3) { (try? playerctl("status")) == "Paused" })
        XCTAssertTrue(waitUntil(3) { recorder!.recentTone(ms: 200, candidates: tonesHere) == nil }, "music while paused")
        try playerctl("play")
        XCTAssertTrue(waitUntil(3) { (try? playerctl("status")) == "Playing" })
        XCTAssertTrue(try music(within: 10), "no music after Play: \(status())")
        let title = try playerctl("metadata", "title")
        try playerctl("next")
        XCTAssertTrue(waitUntil(10) { (try? playerctl("metadata", "title")).map { $0 != title && !$0.isEmpty } ?? false },
                      "Next did not change the track")
        XCTAssertTrue(try music(within: 10), "no music after Next: \(status())")
        try playerctl("volume", "0.5")
        XCTAssertTrue(waitUntil(5) { (try? playerctl("volume")).flatMap(Double.init).map { abs($0 - 0.5) < 0.01 } ?? false },
                      "volume: \((try? playerctl("volume")) ?? "?")")

        // Raise, through the portal, from inside.
        let canRaise = try client.call(destination: MPRISService.busName, path: MPRISInterface.objectPath,
                                       interface: MPRISInterface.properties, member: "Get",
                                       args: [.string(MPRISInterface.root), .string("CanRaise")])
        XCTAssertEqual(canRaise.first, .variant(.bool(true)), "CanRaise with a portal on the bus")
        _ = try client.call(destination: MPRISService.busName, path: MPRISInterface.objectPath,
                            interface: MPRISInterface.root, member: "Raise")
        XCTAssertTrue(waitUntil(10) { portal.uris.withLock { $0.count } == 1 }, "Raise did not reach the portal")
        XCTAssertEqual(portal.uris.withLock { $0.first }, webBase + "/")
        XCTAssertTrue(logged.wait(for: "raise: opened \(webBase)/ through the desktop portal", timeout: 5),
                      logged.text)

        // A reload, as the unit's ExecReload= makes it: /bin/kill, under the same restrictions.
        let reload = try runCommand(launcher + ["/bin/kill", "-HUP", "\(daemon.processIdentifier)"], timeout: 10)
        XCTAssertEqual(reload.status, 0, reload.err)
        XCTAssertTrue(logged.wait(for: "configuration reloaded", timeout: 5), logged.text)
        XCTAssertTrue(try music(within: 10), "no music after the reload: \(status())")

        // Suspend and resume (logind on the stand-in system bus).
        system.prepareForSleep(true)
        XCTAssertTrue(waitUntil(3) { (try? playerctl("status")) == "Paused" }, "not Paused while asleep")
        XCTAssertTrue(waitUntil(3) { recorder!.recentTone(ms: 200, candidates: tonesHere) == nil }, "music while asleep")
        system.prepareForSleep(false)
        XCTAssertTrue(waitUntil(5) { (try? playerctl("status")) == "Playing" })
        XCTAssertTrue(try music(within: 10), "no music after resume: \(status())")

        // An outage of the server's stream, and NetworkManager saying the network went and came.
        try rig.stop("icecast", signal: "KILL")
        var restarted = false
        defer { if !restarted { _ = try? rig.start("icecast") } }
        system.networkState(20)
        XCTAssertTrue(waitUntil(5) { (statusObject()["stream"] as? String ?? "") != "playing" }, status())
        _ = try rig.start("icecast")
        _ = try rig.waitLive()
        restarted = true
        system.networkState(70)
        XCTAssertTrue(try music(within: 15), "no music after the outage: \(status())")

        // Sign-in: a refused password, then the right one (a file the reload reads again).
        let write = try restartWithPasswordInFile("not-the-password")
        Sandbox.assertConfined(daemon.processIdentifier)
        logged = try XCTUnwrap(output)
        XCTAssertTrue(waitUntil(10) { status().contains("refused the password") }, "no refusal: \(status())")
        try write(rig.info.password)
        kill(daemon.processIdentifier, SIGHUP)
        XCTAssertTrue(waitUntil(10) { statusObject()["stream"] as? String == "playing" }, status())
        XCTAssertFalse(status().contains("sign_in"), status())
        XCTAssertTrue(try music(within: 10), "no music after signing in: \(status())")
        stopDaemon()
        XCTAssertTrue(logged.wait(for: "stopping", timeout: 5), logged.text)
        XCTAssertFalse(logged.text.contains("not-the-password"))
    }
}

final class SandboxedPulseAudioTests: SandboxedRunTestCase {
    func testAWholeListeningRunInsideTheUnitsSandbox() throws { try listeningRun() }
}

final class SandboxedPipeWireTests: SandboxedRunTestCase {
    override class var soundKind: String { "pipewire" }
    func testAWholeListeningRunInsideTheUnitsSandbox() throws { try listeningRun() }
}

/// Raise from inside the sandbox with no portal on the bus: through systemd-run (a stand-in that
/// records its arguments, beside the socket a user manager listens on); with neither, no Raise.
final class SandboxedRaiseWithoutPortalTests: DaemonTestCase {
    let denials = FileManager.default.temporaryDirectory.appendingPathComponent("groove-sandbox-raise-\(getpid())")
    var tools: URL { configDir.appendingPathComponent("bin") }
    var runtime: URL { configDir.appendingPathComponent("runtime") }
    override var launcher: [String] { Sandbox.prefix(denials: denials) }

    override var daemonEnvironment: [String: String] {
        var env = super.daemonEnvironment
        env["PATH"] = tools.path + ":" + (env["PATH"] ?? "/usr/bin:/bin")
        env["XDG_RUNTIME_DIR"] = runtime.path
        return env
    }

    override func setUpWithError() throws {
        try Sandbox.require()
        try? FileManager.default.removeItem(at: denials)
        try FileManager.default.createDirectory(at: tools, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: runtime.appendingPathComponent("systemd"), withIntermediateDirectories: true)
        let bound = try runCommand(["/usr/bin/python3", "-c", "import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])",
                                    runtime.appendingPathComponent("systemd/private").path], timeout: 10)
        XCTAssertEqual(bound.status, 0, bound.err)
        try "#!/bin/sh\necho \"$@\" >> \(configDir.path)/systemd-run.args\n".write(
            to: tools.appendingPathComponent("systemd-run"), atomically: true, encoding: .utf8)
        chmod(tools.appendingPathComponent("systemd-run").path, 0o755)
        try super.setUpWithError()
    }

    override func tearDown() {
        super.tearDown()
        let refused = Sandbox.denied(denials)
        XCTAssertEqual(refused, "", "calls the unit's system-call filter refused:\n\(refused)")
        try? FileManager.default.removeItem(at: denials)
    }

    func canRaise() throws -> DBusValue? {
        try client.call(destination: MPRISService.busName, path: MPRISInterface.objectPath, interface: MPRISInterface.properties,
                        member: "Get", args: [.string(MPRISInterface.root), .string("CanRaise")]).first
    }

    func testRaiseGoesThroughSystemdRunAndWithNeitherThereIsNone() throws {
        let logged = try XCTUnwrap(output)
        Sandbox.assertConfined(daemon.processIdentifier)
        XCTAssertNil(client.owner(of: FakePortal.name), "a portal on the rig's bus")
        XCTAssertEqual(try canRaise(), .variant(.bool(true)))
        _ = try client.call(destination: MPRISService.busName, path: MPRISInterface.objectPath,
                            interface: MPRISInterface.root, member: "Raise")
        XCTAssertTrue(logged.wait(for: "raise: opened", timeout: 10), logged.text)
        XCTAssertTrue(logged.text.contains("through systemd-run --user (xdg-open in a unit of its own)"), logged.text)
        let args = try String(contentsOf: configDir.appendingPathComponent("systemd-run.args"), encoding: .utf8)
        XCTAssertTrue(args.hasPrefix("--user --collect --quiet xdg-open http://127.0.0.1:"), args)
        XCTAssertEqual(args.split(separator: "\n").count, 1, args)

        stopDaemon()
        XCTAssertTrue(waitUntil(3) { client.owner(of: MPRISService.busName) == nil })
        var env = daemonEnvironment
        env.removeValue(forKey: "XDG_RUNTIME_DIR")
        try startDaemon(environment: env)
        XCTAssertTrue(waitUntil(10) { client.owner(of: MPRISService.busName) != nil })
        XCTAssertEqual(try canRaise(), .variant(.bool(false)), "CanRaise with no portal and no user manager")
    }
}

/// The password from inside the sandbox: the keyring over D-Bus, and `password_command` with
/// secret-tool and with pass (gpg with its agent started beforehand, as a desktop session has
/// it, and with none, so that gpg starts it inside).
final class SandboxedPasswordTests: KeyringTestCase {
    let denials = FileManager.default.temporaryDirectory.appendingPathComponent("groove-sandbox-pw-denials-\(getpid())")

    override func setUpWithError() throws {
        try Sandbox.require()
        try super.setUpWithError()
        try? FileManager.default.removeItem(at: denials)
    }

    override func tearDown() {
        super.tearDown()
        let refused = Sandbox.denied(denials)
        XCTAssertEqual(refused, "", "calls the unit's system-call filter refused:\n\(refused)")
        try? FileManager.default.removeItem(at: denials)
    }

    func startSandboxed(_ args: [String], env extra: [String: String] = [:]) throws {
        try startBridge(args, launcher: (Sandbox.launcher, Array(Sandbox.prefix(denials: denials).dropFirst())), env: extra)
        if let bridge { Sandbox.assertConfined(bridge.processIdentifier) }
    }

    func assertPlays(from source: String, _ what: String) {
        XCTAssertTrue(waitUntil(10) { status()["stream"] as? String == "playing" }, "\(what): \(status())")
        XCTAssertEqual(status()["password_source"] as? String, source, what)
        let log = stopBridge()
        XCTAssertEqual(bridge?.terminationReason, .exit, "\(what): \(log)")
        XCTAssertEqual(bridge?.terminationStatus, 0, "\(what): \(log)")
        XCTAssertFalse(log.contains(rig.info.password), "\(what): the password in the log")
    }

    func testTheKeyringSecretToolAndPassWorkFromInside() throws {
        try keyring.store(user: "listener", password: rig.info.password)
        try startSandboxed(rigURLs)
        assertPlays(from: "keyring", "the keyring")

        let lookup = "secret-tool lookup service groove-audio user listener"
        try startSandboxed(rigURLs + ["--password-command", lookup])
        assertPlays(from: "password_command", "secret-tool")

        try Rig.requireTools(["pass", "gpg", "gpgconf"])
        let gnupg = keyring.dir.appendingPathComponent("gnupg")
        let store = keyring.dir.appendingPathComponent("password-store")
        try FileManager.default.createDirectory(at: gnupg, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        var env = environment
        env["GNUPGHOME"] = gnupg.path
        env["PASSWORD_STORE_DIR"] = store.path
        defer { _ = try? runCommand(["gpgconf", "--kill", "all"], env: env, timeout: 10) }
        let made = try runCommand(["gpg", "--batch", "--passphrase", "", "--quick-gen-key", "groove-test@example.invalid",
                                   "default", "default", "never"], env: env, timeout: 60)
        XCTAssertEqual(made.status, 0, made.err)
        XCTAssertEqual(try runCommand(["pass", "init", "groove-test@example.invalid"], env: env, timeout: 30).status, 0)
        let stored = try runCommand(["pass", "insert", "--multiline", "groove"], env: env, stdin: rig.info.password + "\n", timeout: 30)
        XCTAssertEqual(stored.status, 0, stored.err)
        try startSandboxed(rigURLs + ["--password-command", "pass show groove"],
                           env: ["GNUPGHOME": gnupg.path, "PASSWORD_STORE_DIR": store.path])
        assertPlays(from: "password_command", "pass")

        // No agent running: gpg starts one from inside, under the same filter.
        XCTAssertEqual(try runCommand(["gpgconf", "--kill", "gpg-agent"], env: env, timeout: 10).status, 0)
        try startSandboxed(rigURLs + ["--password-command", "pass show groove"],
                           env: ["GNUPGHOME": gnupg.path, "PASSWORD_STORE_DIR": store.path])
        assertPlays(from: "password_command", "pass, its agent started inside")
    }
}

/// The launcher itself: what the unit forbids is refused, answered as systemd answers it, and
/// named in the file the tests read.
final class SandboxLauncherTests: XCTestCase {
    func testARefusedCallIsAnsweredAndNamed() throws {
        try Sandbox.require()
        let denials = FileManager.default.temporaryDirectory.appendingPathComponent("groove-sandbox-self-\(getpid())")
        try? FileManager.default.removeItem(at: denials)
        defer { try? FileManager.default.removeItem(at: denials) }
        let script = """
            import ctypes, mmap, os, socket
            libc = ctypes.CDLL(None, use_errno=True)
            def unshare_mount_namespace():
                if libc.unshare(0x20000) != 0:
                    raise OSError(ctypes.get_errno(), "unshare")
            def tried(f):
                try:
                    f()
                    return "allowed"
                except OSError as e:
                    return os.strerror(e.errno)
            print(tried(lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW)))
            print(tried(lambda: mmap.mmap(-1, 4096, prot=mmap.PROT_WRITE | mmap.PROT_EXEC)))
            print(tried(lambda: os.sched_setaffinity(0, {0})))
            print(tried(unshare_mount_namespace))
            print(tried(lambda: socket.socket(socket.AF_INET6, socket.SOCK_STREAM).close()))
            """
        let r = try runCommand(Sandbox.prefix(denials: denials) + ["/usr/bin/python3", "-c", script], timeout: 30)
        XCTAssertEqual(r.status, 0, r.err)
        // A family left out, W^X, a call of a group taken out (@resources), a namespace; then
        // what the unit allows.
        XCTAssertEqual(r.out, "Address family not supported by protocol\n" + String(repeating: "Operation not permitted\n", count: 3)
                       + "allowed\n")
        let lines = Sandbox.denied(denials).split(separator: "\n")
        XCTAssertEqual(lines.count, 4, "\(lines)")
        for (line, call) in zip(lines, ["socket(0x11,", "mmap(0x0, 0x1000, 0x6)", "sched_setaffinity(", "unshare(0x20000,"]) {
            XCTAssertTrue(line.hasPrefix(call) && line.hasSuffix("denied"), "\(line)")
        }
    }
}

/// The unit as installed: systemd's own check, and its offline exposure score no worse than the
/// figure README records.
final class UnitFileTests: XCTestCase {
    /// `systemd-analyze security --offline=true`, ×10: README's figure.
    static let recordedExposure = 63

    func testTheInstalledUnitVerifiesAndScoresAtMostTheRecordedExposure() throws {
        try Rig.requireTools(["systemd-analyze"])
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("groove-unit-\(getpid())")
        defer { try? FileManager.default.removeItem(at: dir) }
        let runtime = dir.appendingPathComponent("runtime")
        try FileManager.default.createDirectory(at: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        var env = ProcessInfo.processInfo.environment
        env["PREFIX"] = dir.path
        env["AUTOSTARTDIR"] = dir.appendingPathComponent("autostart").path
        env["UNITDIR"] = dir.appendingPathComponent("lib/systemd/user").path
        env["GROOVE_BRIDGE_BINARY"] = DaemonTestCase.binary.path
        env["XDG_RUNTIME_DIR"] = runtime.path
        let install = try runCommand([Rig.projectRoot.appendingPathComponent("scripts/install").path], env: env, timeout: 60)
        XCTAssertEqual(install.status, 0, install.err)
        let unit = dir.appendingPathComponent("lib/systemd/user/groove-bridge.service").path

        for mode in [["--user"], []] {
            let verify = try runCommand(["systemd-analyze"] + mode + ["verify", unit], env: env, timeout: 60)
            XCTAssertEqual(verify.status, 0, "verify \(mode): \(verify.out)\(verify.err)")
            XCTAssertEqual(verify.err, "", "verify \(mode) warns")
        }
        let score = try runCommand(["systemd-analyze", "security", "--offline=true", "--threshold=\(Self.recordedExposure)",
                                    "--no-pager", unit], env: env, timeout: 60)
        let overall = score.out.split(separator: "\n").last { $0.contains("Overall exposure level") } ?? "no score"
        print("groove-bridge.service: \(overall)")
        XCTAssertEqual(score.status, 0, "exposure above \(Double(Self.recordedExposure) / 10): \(overall)\n\(score.out)")
        XCTAssertTrue(overall.contains("exposure level for groove-bridge.service: "), String(overall))
    }
}
