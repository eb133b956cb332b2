import Foundation
import Support
import XCTest

/// `runCommand`, behind `password_command`: its output and how it ended, a deadline that stops
/// the command and everything it started, and no wait for what it left running.
final class RunCommandTests: XCTestCase {
    func run(_ script: String, timeoutMs: Int = 5000, limit: Int = 65536) throws -> CommandResult {
        try runCommand(["/bin/sh", "-c", script], timeoutMs: timeoutMs, outputLimit: limit).get()
    }

    func testOutputAndExitStatus() throws {
        var r = try run("echo hunter2; echo more")
        XCTAssertEqual(r.end, .exited(0))
        XCTAssertEqual(String(decoding: r.output, as: UTF8.self), "hunter2\nmore\n")
        r = try run("echo x; exit 3")
        XCTAssertEqual(r.end, .exited(3))
        r = try run("kill -9 $$")
        XCTAssertEqual(r.end, .killedBy(signal: 9))
        XCTAssertThrowsError(try runCommand(["/nonexistent/command"], timeoutMs: 1000, outputLimit: 10).get()) {
            XCTAssertTrue("\($0)".contains("cannot start /nonexistent/command"), "\($0)")
        }
    }

    func testOutputBeyondTheLimitIsReadAndDropped() throws {
        let r = try run("head -c 200000 /dev/zero", limit: 1000)
        XCTAssertEqual(r.end, .exited(0), "the command blocked on a full pipe")
        XCTAssertEqual(r.output.count, 1000)
    }

    func testTheDeadlineStopsTheCommandAndWhatItStarted() throws {
        let marker = FileManager.default.temporaryDirectory.appendingPathComponent("groove-run-\(getpid())").path
        defer { unlink(marker) }
        let t0 = monotonicMs()
        let r = try run("sleep 30 & echo $! > \(marker); wait", timeoutMs: 500)
        XCTAssertEqual(r.end, .timedOut)
        XCTAssertLessThan(monotonicMs() - t0, 3000)
        let sleeper = try XCTUnwrap(Int32(String(contentsOfFile: marker, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        // Gone, or a zombie left for whoever adopted it to reap: not sleeping on.
        XCTAssertTrue(waitUntilGone(sleeper), "the command's own child survived the deadline")
    }

    func testSomethingLeftRunningWithTheOutputDoesNotHoldTheCaller() throws {
        let t0 = monotonicMs()
        let r = try run("(sleep 5 &); echo pw", timeoutMs: 4000)
        XCTAssertEqual(r.end, .exited(0))
        XCTAssertEqual(String(decoding: r.output, as: UTF8.self), "pw\n")
        XCTAssertLessThan(monotonicMs() - t0, 2000)
    }

    func waitUntilGone(_ pid: Int32) -> Bool {
        let deadline = monotonicMs() + 2000
        repeat {
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return true }
            if stat.split(separator: ")").last?.split(separator: " ").first == "Z" { return true }
            usleep(10_000)
        } while monotonicMs() < deadline
        return false
    }
}
