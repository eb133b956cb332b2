@testable import Audio
import Support
import XCTest

/// The decoder thread's loop: a wake-up is never lost, whenever it comes.
final class AudioLoopTests: XCTestCase {
    /// A wake-up between the decoder's last look and its wait (here: before the wait on the same
    /// thread) ends that wait at once; libpulse's preparation empties its own wake-up pipe first.
    func testAWakeBeforeTheWaitEndsIt() {
        let loop = AudioLoop()
        for _ in 0..<5 {
            loop.wake()
            let start = monotonicMs()
            loop.wait(deadlineMs: start + 2000)
            XCTAssertLessThan(monotonicMs() - start, 1000, "the wake-up was lost: the wait ran to its deadline")
        }
        // With nothing to wake it, it waits for its deadline.
        let start = monotonicMs()
        loop.wait(deadlineMs: start + 100)
        XCTAssertGreaterThanOrEqual(monotonicMs() - start, 90)
    }
}
