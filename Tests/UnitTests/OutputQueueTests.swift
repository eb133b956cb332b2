@testable import Audio
import XCTest

/// The output queue: what the playout holds (the join, a warm pause) keeps the newest `keepMs` in
/// whole frames and counts the rest; what was written is kept for a pause to hold again.
final class OutputQueueTests: XCTestCase {
    let cd = AudioFormat(sampleRate: 44100, channels: 2, bitsPerSample: 16)

    /// A frame whose bytes (one sample frame) say which it was.
    func frame(_ n: Int) -> [UInt8] { [UInt8](repeating: UInt8(truncatingIfNeeded: n), count: 4) }

    func add(_ q: inout OutputQueue, _ bytes: [UInt8], ms: Int, keepMs: Int) {
        q.append(bytes: bytes.count, ms: ms) { $0.copyBytes(from: bytes) }
        q.trim(keepMs: keepMs)
    }

    /// A hold of `keepMs` that was given `frames` frames of 100 ms, numbered from 0.
    func held(keepMs: Int, frames: Int) -> OutputQueue {
        var q = OutputQueue()
        q.use(cd)
        for n in 0..<frames { add(&q, frame(n), ms: 100, keepMs: keepMs) }
        return q
    }

    /// What waits, a frame at a time, written.
    func drain(_ q: inout OutputQueue) -> [[UInt8]] {
        var out: [[UInt8]] = []
        while let b = q.waiting(max: 4) {
            out.append(Array(b))
            q.wrote(b.count, keepMs: 0)
        }
        return out
    }

    func testKeepsTheNewestHalfSecondAndCountsTheRest() {
        var q = held(keepMs: 500, frames: 30)
        XCTAssertEqual(q.heldMs, 500)
        XCTAssertEqual(q.droppedMs, 2500)
        XCTAssertEqual(drain(&q), (25..<30).map(frame), "the newest frames, oldest first")
        XCTAssertEqual(q.heldMs, 0)
        XCTAssertTrue(q.isEmpty)
    }

    /// FLAC's 4096-sample frames are 92 ms: whole frames are kept, at least `keepMs` of them.
    func testKeepsWholeFramesAtLeastTheKeep() {
        var q = OutputQueue()
        q.use(cd)
        var total = 0
        for n in 0..<40 {
            add(&q, frame(n), ms: 92, keepMs: 500)
            total += 92
            if total >= 500 { XCTAssertTrue((500..<592).contains(q.heldMs), "\(q.heldMs) ms held") }
            XCTAssertEqual(q.heldMs + q.droppedMs, total)
        }
    }

    /// Frames shorter than a millisecond (a stream of 32-sample blocks) count 0 ms each: what is
    /// held stays bounded by its bytes all the same (twice the keep, in whole frames).
    func testFramesUnderAMillisecondStayBounded() {
        var q = OutputQueue()
        q.use(cd)
        let block = [UInt8](repeating: 0, count: 32 * cd.sinkBytesPerFrame)
        for _ in 0..<100_000 { add(&q, block, ms: cd.milliseconds(frames: 32), keepMs: 500) }
        XCTAssertLessThanOrEqual(q.heldBytes, 2 * cd.sinkBytes(milliseconds: 500) + block.count)
    }

    func testLessThanTheKeepIsAllKept() {
        var q = held(keepMs: 500, frames: 3)
        XCTAssertLessThan(q.heldMs, 500, "not enough to end a join")
        XCTAssertEqual(q.droppedMs, 0)
        XCTAssertEqual(drain(&q).count, 3)
    }

    func testHeldCountsDownAsFramesAreWritten() {
        var q = held(keepMs: 300, frames: 3)
        XCTAssertEqual(q.waiting(max: 4).map(Array.init), frame(0))
        q.wrote(4, keepMs: 0)
        XCTAssertEqual(q.heldMs, 200, "what is still held counts in the delay")
        q.removeAll()
        XCTAssertEqual(q.heldMs, 0)
        XCTAssertNil(q.waiting(max: 4))
    }

    /// Audio of another format cannot be played on the same sink: the queue starts over with the
    /// new format (what is dropped that way is not counted as skipped).
    func testAFormatChangeStartsOver() {
        var q = held(keepMs: 500, frames: 8)
        let hires = AudioFormat(sampleRate: 96000, channels: 2, bitsPerSample: 24)
        q.use(hires)
        add(&q, [UInt8](repeating: 100, count: 8), ms: 100, keepMs: 500)
        XCTAssertEqual(q.format, hires)
        XCTAssertEqual(q.heldMs, 100)
        XCTAssertEqual(q.droppedMs, 300)
        XCTAssertEqual(q.waiting(max: 8).map(Array.init), [UInt8](repeating: 100, count: 8))
    }

    /// The join ends at the latest `joinCapMs` after its first byte, burst over or not.
    func testTheJoinIsOverdueAfterTheCap() {
        var p = Playout(keepMs: 500, learned: Playout.Target(), joining: 1000)
        XCTAssertFalse(p.joinEnds(heldMs: 0, droppedMs: 0, idle: false, ended: false, at: 6000))
        XCTAssertTrue(p.joinEnds(heldMs: 0, droppedMs: 0, idle: false, ended: false, at: 6001))
        XCTAssertEqual(StreamTuning.joinCapMs, 5000)
    }

    func testKeepingNothingDropsEverything() {
        let q = held(keepMs: 0, frames: 3)
        XCTAssertEqual(q.heldMs, 0)
        XCTAssertEqual(q.droppedMs, 300)
        XCTAssertTrue(q.isEmpty)
    }

    /// A pause flushes the sound server: what was written (the newest `keepMs` of it) is held
    /// again before what still waits, and the whole trimmed to the newest `keepMs`.
    func testAPauseHoldsAgainTheNewestWritten() {
        var q = OutputQueue()
        q.use(cd)
        for n in 0..<10 { add(&q, frame(n), ms: 100, keepMs: 10_000) }
        for _ in 0..<8 {
            q.wrote(4, keepMs: 300)  // frames 0–7 written; 5, 6, 7 kept
        }
        XCTAssertEqual(q.heldMs, 200)
        q.rewind(keepMs: 300)
        XCTAssertEqual(drain(&q), (7..<10).map(frame), "the newest 300 ms of all, written or not")
        var r = OutputQueue()
        r.use(cd)
        for n in 0..<10 { add(&r, frame(n), ms: 100, keepMs: 10_000) }
        for _ in 0..<10 { r.wrote(4, keepMs: 300) }
        r.rewind(keepMs: 500)
        XCTAssertEqual(drain(&r), (7..<10).map(frame), "no more than was kept of what was written")
    }
}

extension OutputQueueTests {
    /// What is written of a segment no longer counts as held: the heard delay counts it in the
    /// sound server instead (counted twice, a stall's silence read 400 ms high).
    func testAPartWrittenCountsNoMoreAsHeld() {
        var q = OutputQueue()
        let f = AudioFormat(sampleRate: 1000, channels: 1, bitsPerSample: 16)
        q.use(f)
        q.appendSilence(ms: 600)
        add(&q, [UInt8](repeating: 1, count: 200), ms: 100, keepMs: 10_000)
        XCTAssertEqual(q.heldMs, 700)
        q.wrote(800, keepMs: 0)  // 400 ms of the silence
        XCTAssertEqual(q.heldMs, 300)
        q.wrote(400, keepMs: 0)
        XCTAssertEqual(q.heldMs, 100)
    }
}
