import Foundation
import Support
import XCTest

/// The groove-bridge binary as the system sees it: core dumps, its children, its files. No rig:
/// each test starts the bridge with what it needs (a private bus, a script as a child).
final class ProcessHygieneTests: XCTestCase {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("groove-hygiene-\(getpid())")

    override func setUpWithError() throws {
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    /// An environment without a session bus or a configuration file: the bridge reads its flags,
    /// runs its password command and stops at the bus.
    var busless: [String: String] {
        ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin", "XDG_CONFIG_HOME": "/nonexistent",
         "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent"]
    }

    /// Undumpable, the kernel gives the process's /proc files to root rather than to its user:
    /// seen from outside while the bridge, run as nobody, waits for its password command.
    func testTheBridgeIsUndumpable() throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        p.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", BridgeTests.binary.path,
                       "--host", "127.0.0.1", "--password-command", "sleep 3; echo pw"]
        p.environment = busless
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        defer { if p.isRunning { p.terminate() }; p.waitUntilExit() }
        let status = "/proc/\(p.processIdentifier)/status"
        // setpriv execs the bridge in the same process: wait until it is the bridge that runs.
        XCTAssertTrue(waitUntil(5) {
            ((try? String(contentsOfFile: "/proc/\(p.processIdentifier)/comm", encoding: .utf8)) ?? "").hasPrefix("groove-bridge")
                && ((try? String(contentsOfFile: status, encoding: .utf8)) ?? "").contains("Uid:\t65534")
        }, "the bridge did not start as nobody")
        func owner() -> Int? {
            ((try? FileManager.default.attributesOfItem(atPath: status))?[.ownerAccountID] as? NSNumber)?.intValue
        }
        // It marks itself first thing; the password command takes 3 s.
        XCTAssertTrue(waitUntil(2) { owner() == 0 }, "/proc/PID stays nobody's (\(owner() ?? -1)): the process is dumpable")
        XCTAssertTrue(p.isRunning)
    }

    /// A password command that never ends (a keyring waiting for a prompt nobody sees) is
    /// stopped after 10 s with what it started, and the bridge says so.
    func testAHungPasswordCommandIsStoppedAfterTenSeconds() throws {
        let marker = dir.appendingPathComponent("sleeper").path
        let t0 = monotonicUs()
        let r = try runCommand([BridgeTests.binary.path, "--host", "127.0.0.1",
                                "--password-command", "sleep 300 & echo $! > \(marker); wait"], env: busless, timeout: 30)
        let took = Double(monotonicUs() - t0) / 1e6
        XCTAssertEqual(r.status, 1)
        XCTAssertTrue(r.err.contains("password_command did not finish within 10 s and was stopped"), r.err)
        XCTAssertGreaterThan(took, 9.5)
        XCTAssertLessThan(took, 14)
        let sleeper = try String(contentsOfFile: marker, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let state = (try? String(contentsOfFile: "/proc/\(sleeper)/stat", encoding: .utf8))?.split(separator: ")").last?
            .split(separator: " ").first
        XCTAssertTrue(state == nil || state == "Z", "the command's child is still running (\(state ?? ""))")
    }

    /// Plain http with a password to another computer: one warning as the configuration loads.
    func testAPlainHTTPPasswordToAnotherComputerIsWarnedAboutOnce() throws {
        var env = busless
        env["GROOVE_PASSWORD"] = "hunter2"
        var r = try runCommand([BridgeTests.binary.path, "--stream-url", "http://musicbox.invalid:8000/stream.flac",
                                "--host", "musicbox.invalid"], env: env, timeout: 10)
        XCTAssertEqual(r.err.components(separatedBy: "the password crosses the network unencrypted: use https").count - 1, 1, r.err)
        r = try runCommand([BridgeTests.binary.path, "--stream-url", "http://127.0.0.1:8000/stream.flac",
                            "--host", "127.0.0.1"], env: env, timeout: 10)
        XCTAssertFalse(r.err.contains("unencrypted"), r.err)
    }
}
