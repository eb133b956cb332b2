@testable import Audio
import XCTest

final class JoinBufferTests: XCTestCase {
    let cd = AudioFormat(sampleRate: 44100, channels: 2, bitsPerSample: 16)

    /// A frame whose bytes say which it was.
    func frame(_ n: Int) -> [UInt8] { [UInt8(truncatingIfNeeded: n)] }

    /// A join of `keepMs` that was given `frames` frames of 100 ms, numbered from 0.
    func joined(keepMs: Int, frames: Int) -> JoinBuffer {
        var j = JoinBuffer(keepMs: keepMs, startedMs: 0)
        for n in 0..<frames { j.add(frame(n), format: cd, ms: 100) }
        return j
    }

    func drain(_ j: inout JoinBuffer) -> [[UInt8]] {
        var out: [[UInt8]] = []
        while let c = j.takeFirst() { out.append(c) }
        return out
    }

    func testKeepsTheNewestHalfSecondAndCountsTheRest() {
        var j = joined(keepMs: 500, frames: 30)
        XCTAssertEqual(j.heldMs, 500)
        XCTAssertEqual(j.skippedMs, 2500)
        XCTAssertTrue(j.isFull)
        XCTAssertEqual(drain(&j), (25..<30).map(frame), "the newest frames, oldest first")
        XCTAssertEqual(j.heldMs, 0)
    }

    /// FLAC's 4096-sample frames are 92 ms: whole frames are kept, at least `keepMs` of them.
    func testKeepsWholeFramesAtLeastTheKeep() {
        var j = JoinBuffer(keepMs: 500, startedMs: 0)
        var total = 0
        for n in 0..<40 {
            j.add(frame(n), format: cd, ms: 92)
            total += 92
            if total >= 500 { XCTAssertTrue((500..<592).contains(j.heldMs), "\(j.heldMs) ms held") }
            XCTAssertEqual(j.heldMs + j.skippedMs, total)
        }
    }

    /// Frames shorter than a millisecond (a stream of 32-sample blocks) count 0 ms each: what is
    /// held stays bounded by its bytes all the same (twice the keep, in whole frames).
    func testFramesUnderAMillisecondStayBounded() {
        var j = JoinBuffer(keepMs: 500, startedMs: 0)
        let block = [UInt8](repeating: 0, count: 32 * cd.sinkBytesPerFrame)
        for _ in 0..<100_000 { j.add(block, format: cd, ms: cd.milliseconds(frames: 32)) }
        XCTAssertLessThanOrEqual(drain(&j).reduce(0) { $0 + $1.count }, 2 * cd.sinkBytes(milliseconds: 500) + block.count)
    }

    func testLessThanTheKeepIsAllKeptAndNotFull() {
        var j = joined(keepMs: 500, frames: 3)
        XCTAssertFalse(j.isFull)
        XCTAssertEqual(j.skippedMs, 0)
        XCTAssertEqual(drain(&j).count, 3)
    }

    func testHeldCountsDownAsChunksAreTaken() {
        var j = joined(keepMs: 300, frames: 3)
        XCTAssertEqual(j.takeFirst(), frame(0))
        XCTAssertEqual(j.heldMs, 200, "what is still held counts in the delay")
        j.removeAll()
        XCTAssertEqual(j.heldMs, 0)
        XCTAssertNil(j.takeFirst())
    }

    /// Audio of another format cannot be played on the same sink: the join starts over with the
    /// new format (what is dropped that way is not counted as skipped).
    func testAFormatChangeStartsOver() {
        var j = joined(keepMs: 500, frames: 8)
        let hires = AudioFormat(sampleRate: 96000, channels: 2, bitsPerSample: 24)
        j.add(frame(100), format: hires, ms: 100)
        XCTAssertEqual(j.format, hires)
        XCTAssertEqual(j.heldMs, 100)
        XCTAssertEqual(j.skippedMs, 300)
        XCTAssertEqual(drain(&j), [frame(100)])
    }

    func testOverdueAfterTheCap() {
        let j = JoinBuffer(keepMs: 500, startedMs: 1000, capMs: 5000)
        XCTAssertFalse(j.isOverdue(nowMs: 6000))
        XCTAssertTrue(j.isOverdue(nowMs: 6001))
        XCTAssertEqual(JoinBuffer(keepMs: 500, startedMs: 0).capMs, 5000, "StreamTuning.joinCapMs")
    }

    func testKeepingNothingDropsEverything() {
        let j = joined(keepMs: 0, frames: 3)
        XCTAssertEqual(j.heldMs, 0)
        XCTAssertEqual(j.skippedMs, 300)
        XCTAssertTrue(j.isFull)
    }
}
