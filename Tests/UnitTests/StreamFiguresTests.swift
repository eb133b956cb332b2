@testable import Audio
import XCTest

/// The stream tells a fall of its heard delay at once (a drop towards live), and nothing else.
final class StreamFiguresTests: XCTestCase {
    func testOnlyAFallOfMoreThan100MsIsTold() {
        var f = StreamFigures()
        var told: [String] = []
        func measure(_ delayMs: Int) {
            if let fall = f.measured(bufferedMs: 500, delayMs: delayMs, atMs: 1) { told.append("\(fall.fromMs)→\(fall.toMs)") }
        }
        measure(2000)            // the first measure
        measure(2600)            // a rise (a stall)
        measure(2500)            // smoothed back by 100: not a drop
        measure(1300)            // a drop of 1.2 s
        f.outputStopped(atMs: 2) // nothing plays: 0 is no fall
        measure(900)             // the next connection's first measure
        measure(Int.min)         // nonsense cannot trap
        XCTAssertEqual(told, ["2500→1300"])
    }
}
