import Foundation
import XCTest

/// The tests' own wait for a child's end (`Process.waitForExit`): a zombie's status is read from
/// `/proc`, for when Foundation misses a child's exit.
final class ProcessExitTests: XCTestCase {
    /// A child spawned outside Foundation, left unreaped: its exit code, and the signal that
    /// ended another, read from `/proc`; no zombie once reaped.
    func testAZombiesStatusIsReadFromProc() throws {
        func spawn(_ script: String) throws -> pid_t {
            var pid: pid_t = 0
            let argv: [UnsafeMutablePointer<CChar>?] = ["/bin/sh", "-c", script].map { (s: String) in strdup(s) } + [nil]
            defer { argv.forEach { free($0) } }
            guard posix_spawn(&pid, "/bin/sh", nil, nil, argv, environ) == 0 else { throw POSIXError(.EAGAIN) }
            return pid
        }
        for (script, exited, code) in [("exit 3", true, Int32(3)), ("kill -TERM $$", false, SIGTERM)] {
            let pid = try spawn(script)
            var status: Int32? = nil
            XCTAssertTrue(waitUntil(5) { status = Process.zombieStatus(pid); return status != nil }, "\(script): no zombie seen")
            let s = try XCTUnwrap(status)
            XCTAssertEqual(s & 0x7f == 0, exited, script)
            XCTAssertEqual(exited ? (s >> 8) & 0xff : s & 0x7f, code, script)
            var reaped: Int32 = 0
            XCTAssertEqual(waitpid(pid, &reaped, 0), pid)
            XCTAssertEqual(reaped, s, "the status waitpid reports")
            XCTAssertNil(Process.zombieStatus(pid), "reaped: no zombie")
        }
    }

    /// A process still running when the wait ends: nil; once stopped, the signal that ended it.
    func testTheWaitIsBounded() throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/sleep")
        p.arguments = ["30"]
        try p.run()
        XCTAssertNil(p.waitForExit(timeoutS: 0.2))
        p.terminate()
        let end = try XCTUnwrap(p.waitForExit(timeoutS: 10))
        XCTAssertFalse(end.exited)
        XCTAssertEqual(end.code, SIGTERM)
    }

    /// Waiting for many commands leaves no descriptors behind (Foundation's Process.run crashed
    /// once some 1 350 were open).
    func testCommandsLeaveNoDescriptorsBehind() throws {
        func open() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 0 }
        _ = try runCommand(["true"])
        let before = open()
        for _ in 0..<100 { XCTAssertEqual(try runCommand(["true"]).status, 0) }
        XCTAssertLessThan(open() - before, 20, "descriptors left open by 100 commands")
    }
}
