import DBus
import Foundation
import MPRIS
import Support
import XCTest

/// The groove-bridge binary against a server that sends everything a Mopidy should not
/// (Tests/Fixtures/hostile_mopidy.py): numbers as strings and beyond int64 in every field, wrong
/// shapes, 100 000-deep nesting, 20 MiB and near-limit messages, a burst of 25 000 events, invalid
/// UTF-8, reserved opcodes and RSV bits, a frame claiming 2^62 bytes. The bridge stays up, keeps
/// its name, answers GetAll, peaks under 40 MB, and follows the server once it turns sane.
final class HostileServerTests: XCTestCase {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("groove-hostile-\(getpid())")
    var processes: [Process] = []

    override func setUpWithError() throws {
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("bus"), withIntermediateDirectories: true)
    }

    override func tearDown() {
        for p in processes.reversed() where p.isRunning {
            p.terminate()
            p.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: dir)
    }

    func start(_ argv: [String], environment: [String: String]? = nil, output: Any? = nil) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: argv[0])
        p.arguments = Array(argv.dropFirst())
        if let environment { p.environment = environment }
        if let output { p.standardOutput = output; p.standardError = output }
        try p.run()
        processes.append(p)
        return p
    }

    func get(_ url: String) throws -> String {
        String(decoding: try runCommand(["curl", "-s", "--max-time", "5", url]).bytes, as: UTF8.self)
    }

    /// The kB after `field` in /proc/PID/status.
    func statusKB(_ pid: Int32, _ field: String) -> Int {
        let text = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = text.split(separator: "\n").first { $0.hasPrefix(field + ":") } ?? ""
        return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "") ?? -1
    }

    func testHostileServerNeverStopsTheBridge() throws {
        // The fixture.
        let fixtureOut = Pipe()
        _ = try start(["/usr/bin/env", "python3", Rig.projectRoot.appendingPathComponent("Tests/Fixtures/hostile_mopidy.py").path],
                      output: fixtureOut)
        let port = try XCTUnwrap(Int(LineReader(fixtureOut.fileHandleForReading).readLine(timeout: 10) ?? ""))
        let base = "http://127.0.0.1:\(port)"

        // A session bus of its own.
        let address = "unix:path=\(dir.path)/bus/socket"
        _ = try start(["/usr/bin/dbus-daemon", "--session", "--nofork", "--nopidfile", "--address=\(address)"],
                      output: FileHandle.nullDevice)
        XCTAssertNotNil(connectWhenUp(address), "the bus did not start")

        var env = ProcessInfo.processInfo.environment
        env["DBUS_SESSION_BUS_ADDRESS"] = address
        env["XDG_CONFIG_HOME"] = dir.appendingPathComponent("config").path
        env["XDG_CACHE_HOME"] = dir.appendingPathComponent("cache").path
        env.removeValue(forKey: "GROOVE_PASSWORD")
        let log = dir.appendingPathComponent("bridge.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let bridge = try start([BridgeTests.binary.path, "--rpc-url", "\(base)/mopidy/rpc", "--ws-url", "ws://127.0.0.1:\(port)/mopidy/ws"],
                               environment: env, output: try FileHandle(forWritingTo: log))
        let bus = try DBusConnection(address: address)
        XCTAssertTrue(waitUntil(10) { bus.owner(of: MPRISService.busName) != nil }, "the bridge is not on the bus")
        let owner = try XCTUnwrap(bus.owner(of: MPRISService.busName))

        func getAll() throws -> [DBusValue] {
            try bus.call(destination: MPRISService.busName, path: MPRISInterface.objectPath,
                         interface: MPRISInterface.properties, member: "GetAll", args: [.string(MPRISInterface.player)])
        }
        func metadata() throws -> String { "\(try getAll())" }
        func status() -> (out: String, bytes: [UInt8]) {
            var statusEnv = env
            statusEnv["DBUS_SESSION_BUS_ADDRESS"] = address
            guard let r = try? runCommand([BridgeTests.binary.path, "status"], env: statusEnv, timeout: 10) else { return ("", []) }
            return (r.out, r.bytes)
        }

        // Hostile: every WebSocket scenario, and RPC replies by the hundred, while the bridge is
        // watched from outside.
        var worstGetAllUs: Int64 = 0, calls = 0, sawEscapedTitle = false
        let deadline = monotonicMs() + 120_000
        var progress: [String: Int] = [:]
        while monotonicMs() < deadline {
            XCTAssertTrue(bridge.isRunning, "the bridge stopped")
            guard bridge.isRunning else { break }
            XCTAssertEqual(bus.owner(of: MPRISService.busName), owner, "the bridge lost its bus name")
            let t0 = monotonicUs()
            let all = try getAll()
            worstGetAllUs = max(worstGetAllUs, monotonicUs() - t0)
            calls += 1
            // A server's file:// art is never published.
            XCTAssertFalse("\(all)".contains("/etc/passwd") || "\(all)".contains("/etc/shadow"), "\(all)")
            if calls % 10 == 0 {
                let s = status()
                XCTAssertFalse(s.bytes.contains(0x1B), "status printed an escape sequence: \(s.out)")
                if s.out.contains("\\x1B]0;pwned") { sawEscapedTitle = true }
            }
            progress = (try? JSONSerialization.jsonObject(with: Data(try get("\(base)/control/progress").utf8))) as? [String: Int] ?? [:]
            if let n = progress["scenarios"], let total = progress["total"], n >= total, progress["rpc"] ?? 0 >= 150,
               sawEscapedTitle { break }
            usleep(200_000)
        }
        XCTAssertGreaterThanOrEqual(progress["scenarios"] ?? 0, progress["total"] ?? 1, "not every scenario reached the bridge: \(progress)")
        XCTAssertTrue(sawEscapedTitle, "status never showed the hostile title (escaped)")
        print("hostile server: \(calls) GetAll, slowest \(worstGetAllUs) µs; \(progress)")
        XCTAssertLessThan(worstGetAllUs, 1_000_000)

        // Sane again: the right track within 10 s.
        _ = try get("\(base)/control/sane")
        let t0 = monotonicUs()
        XCTAssertTrue(waitUntil(10) {
            let m = (try? metadata()) ?? ""
            return m.contains("Sane Track") && m.contains("Sane Artist") && m.contains("Playing")
        }, "the sane track is not published: \((try? metadata()) ?? "")")
        print("hostile server: sane track published \(Double(monotonicUs() - t0) / 1e6) s after the server turned sane")

        let peakKB = statusKB(bridge.processIdentifier, "VmHWM")
        print("hostile server: the bridge's peak RSS (VmHWM) \(peakKB) kB")
        XCTAssertGreaterThan(peakKB, 0)
        XCTAssertLessThan(peakKB, 40 * 1024, "peak RSS \(peakKB) kB")

        bridge.terminate()
        bridge.waitUntilExit()
        XCTAssertEqual(bridge.terminationStatus, 0)
        let text = try String(contentsOf: log, encoding: .utf8)
        XCTAssertFalse(text.contains("user:pw"), "credentials of a server's URL in the log")
        XCTAssertFalse(text.utf8.contains(0x1B), "an escape sequence reached the log")
        XCTAssertTrue(text.contains("outside"), "no value was clamped or dropped with a log line")
        XCTAssertTrue(text.contains("is larger than 6 MiB, the limit for one Mopidy reply"), "no oversize reply was said")
        XCTAssertTrue(text.contains("events: skipped a message of 20 MiB"), "the 20 MiB event was not said")
        XCTAssertTrue(text.contains("more than any Mopidy event"), "the frame claiming 2^62 bytes was not said")
        XCTAssertFalse(text.contains("unencrypted"), "a loopback server is not worth the warning")
    }
}
