import DBus
import Foundation
import XCTest

/// A private session bus with a real GNOME Keyring on it (DESIGN.md): HOME and XDG_RUNTIME_DIR
/// of its own, the login keyring made and unlocked with a password drawn for the run. Each test
/// gets a fresh one; `stop` ends both processes by pid and removes the folder.
final class TestKeyring {
    let dir: URL
    let address: String
    private let bus = Process()
    private let keyring = Process()

    static let tools = ["dbus-daemon", "gnome-keyring-daemon", "secret-tool"]

    init() throws {
        try Rig.requireTools(TestKeyring.tools)
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("groove-keyring-\(getpid())-\(UUID().uuidString.prefix(8))")
        for sub in ["home", "runtime"] {
            try FileManager.default.createDirectory(at: dir.appendingPathComponent(sub), withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        }
        address = "unix:path=\(dir.path)/bus"
        // Whatever fails from here on, nothing started is left running (a daemon left holding the
        // test's output would keep `swift test` waiting for ever).
        var started = false
        defer { if !started { stop() } }
        bus.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        bus.arguments = ["dbus-daemon", "--session", "--nofork", "--nopidfile", "--address=\(address)"]
        bus.environment = environment
        bus.standardOutput = FileHandle.nullDevice
        bus.standardError = FileHandle.nullDevice
        try bus.run()
        guard let client = connectWhenUp(address) else {
            throw Rig.RigError(message: "the keyring's bus did not start")
        }
        // --unlock reads the login keyring's password from stdin and makes the keyring with it.
        keyring.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        keyring.arguments = ["gnome-keyring-daemon", "--foreground", "--unlock", "--components=secrets"]
        keyring.environment = environment
        let input = Pipe()
        keyring.standardInput = input
        keyring.standardOutput = FileHandle.nullDevice
        keyring.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try keyring.run()
        input.fileHandleForWriting.write(Data(UUID().uuidString.utf8))
        try input.fileHandleForWriting.close()
        guard waitUntil(10, { client.owner(of: "org.freedesktop.secrets") != nil }) else {
            throw Rig.RigError(message: "gnome-keyring-daemon did not take org.freedesktop.secrets")
        }
        started = true
    }

    /// For clients of this keyring: its bus, HOME and runtime folder.
    var environment: [String: String] {
        var env = ProcessInfo.processInfo.environment
        env["HOME"] = dir.appendingPathComponent("home").path
        env["XDG_RUNTIME_DIR"] = dir.appendingPathComponent("runtime").path
        env["DBUS_SESSION_BUS_ADDRESS"] = address
        env.removeValue(forKey: "DISPLAY")
        env.removeValue(forKey: "WAYLAND_DISPLAY")
        return env
    }

    /// What a user does by hand: `secret-tool store`.
    func store(user: String, password: String) throws {
        let r = try runCommand(["secret-tool", "store", "--label=Groove Audio", "service", "groove-audio", "user", user],
                               env: environment, stdin: password)
        guard r.status == 0 else { throw Rig.RigError(message: "secret-tool store: \(r.err)") }
    }

    /// `secret-tool lookup`: the stored password, or nil.
    func lookup(user: String) throws -> String? {
        let r = try runCommand(["secret-tool", "lookup", "service", "groove-audio", "user", user], env: environment)
        return r.status == 0 ? r.out : nil
    }

    /// How many items the keyring holds for `user` (unlocked and locked).
    func itemCount(user: String) throws -> Int {
        let c = try DBusConnection(address: address)
        let r = try c.call(destination: "org.freedesktop.secrets", path: "/org/freedesktop/secrets",
                           interface: "org.freedesktop.Secret.Service", member: "SearchItems",
                           args: [.dict(key: "s", value: "s", [(.string("service"), .string("groove-audio")), (.string("user"), .string(user))])])
        return r.reduce(0) { n, v in if case .array(_, let items) = v { return n + items.count }; return n }
    }

    /// Locks the login keyring, as the desktop does on screen lock or at log-out.
    func lock() throws {
        let c = try DBusConnection(address: address)
        _ = try c.call(destination: "org.freedesktop.secrets", path: "/org/freedesktop/secrets",
                       interface: "org.freedesktop.Secret.Service", member: "Lock",
                       args: [.array(element: "o", [.objectPath(ObjectPath("/org/freedesktop/secrets/collection/login")!)])])
    }

    func stop() {
        for p in [keyring, bus] where p.isRunning {
            p.terminate()
            p.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: dir)
    }
}
