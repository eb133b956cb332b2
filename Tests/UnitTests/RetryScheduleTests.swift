import Support
import XCTest

/// The one retry schedule of the stream and the events socket, as a table.
final class RetryScheduleTests: XCTestCase {
    func testTheScheduleAsATable() {
        let s = RetrySchedule.home
        let table: [(FailureKind, Int, Int)] = [
            // Transient: quickly for two minutes, then every 5 s up to ten, then every 30 s.
            (.transient, 0, 250),
            (.transient, -5, 250),
            (.transient, 1, 500),
            (.transient, 3000, 500),
            (.transient, 119_999, 500),
            (.transient, 120_000, 5000),
            (.transient, 599_999, 5000),
            (.transient, 600_000, 30_000),
            (.transient, .max, 30_000),
            (.transient, .min, 250),
            // What waiting will not fix: slowly from the start, whenever it comes.
            (.permanent, 0, 30_000),
            (.permanent, 60_000, 30_000),
            (.permanent, 3_600_000, 30_000),
        ]
        for (kind, since, want) in table {
            XCTAssertEqual(s.delayMs(after: kind, sinceFirstFailureMs: since), want, "\(kind) after \(since) ms")
        }
    }

    /// The bound the outage tests hold the code to.
    func testAttemptsInAWindow() {
        let s = RetrySchedule.home
        XCTAssertEqual(s.attempts(inFirstMs: 0), 1)
        XCTAssertEqual(s.attempts(inFirstMs: 250), 2)
        XCTAssertEqual(s.attempts(inFirstMs: 4000), 9)  // 0, 0.25, 0.75, … 3.75 s
        XCTAssertEqual(s.attempts(inFirstMs: 30_000), 61)  // … 29.25, 29.75 s
        // 241 in the first two minutes (the last at 120.25 s), then one every 5 s to 600 s.
        XCTAssertEqual(s.attempts(inFirstMs: 600_000), 241 + 96)
        var none = RetrySchedule()
        none.fastMs = 0
        XCTAssertEqual(none.attempts(inFirstMs: 1000), .max, "no waits, no bound")
    }

    func testTheOutageClock() {
        var c = OutageClock()
        XCTAssertEqual(c.failed(atMs: 1000), 0)
        XCTAssertEqual(c.failed(atMs: 1500), 500)
        XCTAssertEqual(c.failed(atMs: 900), -100, "a clock that goes back gives a negative age, read as 0")
        c.reset()
        XCTAssertNil(c.firstFailureMs)
        XCTAssertEqual(c.failed(atMs: .max), 0)
        XCTAssertEqual(c.failed(atMs: .min), .min, "saturates")
    }
}
