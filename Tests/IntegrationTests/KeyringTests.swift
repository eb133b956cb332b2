import Bridge
import DBus
import Foundation
import MPRIS
import XCTest

/// The bridge and `groove-bridge login` against a real GNOME Keyring on a bus of its own, with the
/// rig's server and sound: what a desktop without a password in any file does.
class KeyringTestCase: XCTestCase {
    var rig: Rig!
    var keyring: TestKeyring!
    var bridge: Process?
    var bridgeLog = Pipe()
    var dir: URL!

    override func setUpWithError() throws {
        rig = try Rig.get()
        keyring = try TestKeyring()
        dir = keyring.dir.appendingPathComponent("config")
    }

    override func tearDown() {
        if let bridge, bridge.isRunning { bridge.terminate(); bridge.waitUntilExit() }
        keyring?.stop()
    }

    /// A desktop session's environment on the keyring's bus, playing into the rig's sink, with
    /// no GROOVE_PASSWORD.
    var environment: [String: String] {
        var env = rig.clientEnvironment
        for (k, v) in keyring.environment where ["HOME", "DBUS_SESSION_BUS_ADDRESS"].contains(k) { env[k] = v }
        env["XDG_CONFIG_HOME"] = dir.path
        env["XDG_CACHE_HOME"] = dir.appendingPathComponent("cache").path
        env.removeValue(forKey: "GROOVE_PASSWORD")
        return env
    }

    var configFile: URL { dir.appendingPathComponent("groove-bridge/config") }

    var rigURLs: [String] {
        ["--stream-url", rig.info.stream_url, "--rpc-url", rig.info.groove_rpc_url, "--ws-url", rig.info.groove_ws_url]
    }

    /// Starts the bridge with `args`, through `launcher` (a program and its arguments before the
    /// bridge's path) when given, with `extra` added to the environment.
    func startBridge(_ args: [String], launcher: (URL, [String])? = nil, env extra: [String: String] = [:]) throws {
        let p = Process()
        p.executableURL = launcher?.0 ?? DaemonTestCase.binary
        p.arguments = (launcher.map { $0.1 + [DaemonTestCase.binary.path] } ?? []) + args + ["--sink", rig.info.sink, "--autoplay"]
        var env = environment
        for (k, v) in extra { env[k] = v }
        p.environment = env
        bridgeLog = Pipe()
        p.standardError = bridgeLog
        p.standardOutput = bridgeLog
        try p.run()
        bridge = p
        let bus = try DBusConnection(address: keyring.address)
        XCTAssertTrue(waitUntil(10) { bus.owner(of: MPRISService.busName) != nil }, "the bridge is not on the bus")
    }

    /// Everything the bridge logged, once it has ended.
    func stopBridge() -> String {
        guard let bridge else { return "" }
        if bridge.isRunning { bridge.terminate(); bridge.waitUntilExit() }
        return String(decoding: bridgeLog.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }

    func status() -> [String: Any] {
        let out = (try? runCommand([DaemonTestCase.binary.path, "status", "--json"], env: environment).out) ?? ""
        return (try? JSONSerialization.jsonObject(with: Data(out.utf8))) as? [String: Any] ?? [:]
    }

    func login(_ args: [String], password: String?, env extra: [String: String] = [:]) throws -> (status: Int32, out: String, err: String) {
        var env = environment
        for (k, v) in extra { env[k] = v }
        let r = try runCommand([DaemonTestCase.binary.path, "login"] + args + (password == nil ? [] : ["--password-stdin"]),
                               env: env, stdin: password.map { $0 + "\n" }, timeout: 30)
        return (r.status, r.out, r.err)
    }
}

final class KeyringTests: KeyringTestCase {
    func testLookupAndStoreAgreeWithSecretTool() throws {
        XCTAssertEqual(Keyring.lookup(user: "listener", busAddress: keyring.address), .notFound)
        try keyring.store(user: "listener", password: "by hand é")
        XCTAssertEqual(Keyring.lookup(user: "listener", busAddress: keyring.address), .found("by hand é"))
        XCTAssertEqual(Keyring.lookup(user: "someone", busAddress: keyring.address), .notFound)
        // Storing again replaces the item secret-tool made: one item, the new secret.
        try Keyring.store(user: "listener", password: "from login", busAddress: keyring.address)
        XCTAssertEqual(try keyring.lookup(user: "listener"), "from login")
        XCTAssertEqual(try keyring.itemCount(user: "listener"), 1)
        try Keyring.store(user: "ada", password: "hers", busAddress: keyring.address)
        XCTAssertEqual(try keyring.lookup(user: "ada"), "hers")
        XCTAssertEqual(Keyring.lookup(user: "listener", busAddress: keyring.address), .found("from login"))

        try keyring.lock()
        XCTAssertEqual(Keyring.lookup(user: "listener", busAddress: keyring.address), .locked)
        XCTAssertThrowsError(try Keyring.store(user: "listener", password: "x", busAddress: keyring.address)) {
            XCTAssertEqual(($0 as? DBusFailure)?.name, "org.freedesktop.Secret.Error.IsLocked")
        }
        guard case .unavailable = Keyring.lookup(user: "listener", busAddress: "unix:path=\(keyring.dir.path)/none") else {
            return XCTFail("a bus that is not there is not 'unavailable'")
        }
    }

    /// Done-when: a bridge with no password in its configuration plays with the keyring's.
    func testABridgeWithNoPasswordPlaysWithTheKeyringsPassword() throws {
        try keyring.store(user: "listener", password: rig.info.password)
        let recorder = try Recorder(rig: rig)
        defer { recorder.stop() }
        try startBridge(rigURLs)
        XCTAssertTrue(waitUntil(10) { status()["stream"] as? String == "playing" }, "\(status())")
        XCTAssertEqual(status()["password_source"] as? String, "keyring")
        let tone = try XCTUnwrap(rig.track(titled: try rig.currentTitle() ?? "")?.freq)
        XCTAssertNotNil(recorder.waitForTone(tone, candidates: rig.info.tracks.map(\.freq), timeout: 5), "not heard")
        let environ = try String(decoding: Data(contentsOf: URL(fileURLWithPath: "/proc/\(bridge!.processIdentifier)/environ")), as: UTF8.self)
        XCTAssertFalse(environ.contains(rig.info.password), "the password in the environment")
        XCTAssertFalse("\(status())".contains(rig.info.password), "the password in status")
        let log = stopBridge()
        XCTAssertTrue(log.contains("password: from the keyring (service groove-audio, user listener)"), log)
        XCTAssertFalse(log.contains(rig.info.password), "the password in the log")
    }

    /// A locked keyring: one clear log line and a status entry, no prompt, no loop.
    func testALockedKeyringIsSaidOnceAndInStatus() throws {
        try keyring.store(user: "listener", password: rig.info.password)
        try keyring.lock()
        try startBridge(rigURLs)
        XCTAssertTrue(waitUntil(10) { status()["keyring"] != nil }, "\(status())")
        let s = status()
        XCTAssertEqual(s["password_source"] as? String, "keyring (locked)")
        XCTAssertTrue((s["keyring"] as? String ?? "").contains("is locked: unlock it"), "\(s)")
        XCTAssertTrue(waitUntil(10) { (status()["sign_in"] as? String ?? "").contains("from the locked keyring") }, "\(status())")
        usleep(2_000_000)
        let log = stopBridge()
        XCTAssertEqual(log.components(separatedBy: "but is locked").count - 1, 1, log)
    }
}
