@testable import Audio
import Synchronization
import XCTest

/// The stream tells a fall of its heard delay at once (a drop towards live), and nothing else.
final class StreamStatsFallTests: XCTestCase {
    func testOnlyAFallOfMoreThan100MsIsTold() {
        let stats = StreamStats()
        let told = Mutex<[String]>([])
        stats.onDelayFall { from, to in told.withLock { $0.append("\(from)→\(to)") } }
        stats.output(bufferedMs: 500, delayMs: 2000)   // the first measure
        stats.output(bufferedMs: 500, delayMs: 2600)   // a rise (a stall)
        stats.output(bufferedMs: 500, delayMs: 2500)   // smoothed back by 100: not a drop
        stats.output(bufferedMs: 500, delayMs: 1300)   // a drop of 1.2 s
        stats.outputStopped()                           // nothing plays: 0 is no fall
        stats.output(bufferedMs: 500, delayMs: 900)     // the next connection's first measure
        stats.output(bufferedMs: 500, delayMs: Int.min) // nonsense cannot trap
        XCTAssertEqual(told.withLock { $0 }, ["2500→1300"])
        stats.onDelayFall(nil)
        stats.output(bufferedMs: 500, delayMs: 2000)
        stats.output(bufferedMs: 500, delayMs: 1000)
        XCTAssertEqual(told.withLock { $0 }, ["2500→1300"], "no one told once the observer is gone")
    }
}
