@testable import Audio
import XCTest

/// The way back towards live (#24): what `CushionPolicy` drops, and where.
final class CushionPolicyTests: XCTestCase {
    /// Frames of `frameMs` decoded every `frameMs` from `fromMs`, each `waited` and `silent` as
    /// given in turn: which were dropped.
    func run(_ p: inout CushionPolicy, fromMs: Int = 0, frameMs: Int = 93, _ frames: [(waited: Int, silent: Bool)]) -> [Bool] {
        frames.enumerated().map { k, f in p.drop(frameMs: frameMs, waitedMs: f.waited, silent: f.silent, nowMs: fromMs + k * frameMs) }
    }

    func testOnACleanLinkNothingIsDropped() {
        var p = CushionPolicy(marginMs: 300, windowMs: 1000)
        let clean = (0..<40).map { k in (waited: [5, 80, 120, 30][k % 4], silent: true) }
        XCTAssertEqual(run(&p, clean), Array(repeating: false, count: 40))
        XCTAssertEqual(p.droppedMs, 0)
        XCTAssertEqual(p.excessMs(nowMs: 39 * 93), 5)
    }

    func testABacklogIsDroppedInSilenceOnlyOnceItHeldForTheWindowDownToHalfTheMargin() {
        var p = CushionPolicy(marginMs: 300, windowMs: 1000)
        // A burst left 1400 ms waiting; music plays on (nothing dropped however far behind).
        let music = run(&p, Array(repeating: (waited: 1400, silent: false), count: 20))
        XCTAssertEqual(music, Array(repeating: false, count: 20))
        XCTAssertEqual(p.excessMs(nowMs: 19 * 93), 1400)
        // Then silence: each dropped frame brings the next one's bytes that much sooner.
        var waited = 1400, dropped: [Bool] = [], now = 20 * 93
        for _ in 0..<20 {
            let d = p.drop(frameMs: 93, waitedMs: waited, silent: true, nowMs: now)
            dropped.append(d)
            if d { waited -= 93 } else { now += 93 }
        }
        XCTAssertEqual(dropped.prefix(while: { $0 }).count, 13, "\(dropped)")
        XCTAssertEqual(p.droppedMs, 13 * 93)
        XCTAssertLessThanOrEqual(waited, 150 + 93)
        XCTAssertGreaterThanOrEqual(waited, 150)
        XCTAssertEqual(p.takeDropped(), 13 * 93)
        XCTAssertEqual(p.takeDropped(), 0, "told once")
    }

    func testAMomentsLateFramesStartNoDrop() {
        var p = CushionPolicy(marginMs: 300, windowMs: 1000)
        // A busy CPU for half a second: frames waited, but not for the whole window.
        let frames = (0..<30).map { k in (waited: (10...15).contains(k) ? 600 : 20, silent: true) }
        XCTAssertEqual(run(&p, frames), Array(repeating: false, count: 30))
        // Nor before the frames span the window.
        var q = CushionPolicy(marginMs: 300, windowMs: 1000)
        XCTAssertEqual(run(&q, Array(repeating: (waited: 2000, silent: true), count: 10)), Array(repeating: false, count: 10))
        XCTAssertNil(CushionPolicy().excessMs(nowMs: 0))
    }

    func testAnExtraCushionIsKept() {
        var p = CushionPolicy(marginMs: 300, extraMs: 800, windowMs: 1000)
        XCTAssertEqual(run(&p, Array(repeating: (waited: 1000, silent: true), count: 20)), Array(repeating: false, count: 20))
        XCTAssertEqual(p.excessMs(nowMs: 19 * 93), 200)
        var q = CushionPolicy(marginMs: 300, extraMs: 800, windowMs: 1000)
        let dropped = run(&q, Array(repeating: (waited: 1400, silent: true), count: 12))
        XCTAssertEqual(dropped.filter { $0 }.count, 1, "once the frames span the window (the 12th), 600 ms over the extra")
    }

    func testOutOfRangeInputsDropNothingAndCannotTrap() {
        var p = CushionPolicy(marginMs: -5, extraMs: -5, windowMs: -5)
        XCTAssertEqual(p.marginMs, 0)
        XCTAssertEqual(p.extraMs, 0)
        XCTAssertFalse(p.drop(frameMs: 0, waitedMs: Int.max, silent: true, nowMs: Int.min))
        XCTAssertFalse(p.drop(frameMs: -1, waitedMs: Int.max, silent: true, nowMs: Int.max))
        XCTAssertFalse(p.drop(frameMs: 93, waitedMs: Int.min, silent: true, nowMs: 0))
        XCTAssertTrue(p.drop(frameMs: Int.max, waitedMs: Int.max, silent: true, nowMs: Int.max))
        XCTAssertEqual(p.droppedMs, Int.max)
        XCTAssertTrue(p.drop(frameMs: 93, waitedMs: Int.max, silent: true, nowMs: Int.max))
        XCTAssertEqual(p.droppedMs, Int.max, "saturates")
    }

    /// Digital silence: every sample of every channel within ±1 step of 16 bits (0 below 16).
    func testDigitalSilenceIsWithinOneStepOf16BitsAtAnyDepth() {
        func silent(_ bits: Int, _ left: [Int32], _ right: [Int32]) -> Bool {
            left.withUnsafeBufferPointer { l in
                right.withUnsafeBufferPointer { r in
                    let planes: [UnsafePointer<Int32>?] = [l.baseAddress, r.baseAddress]
                    return planes.withUnsafeBufferPointer { p in
                        CushionPolicy.isSilent(DecodedFrame(format: AudioFormat(sampleRate: 44100, channels: 2, bitsPerSample: bits),
                                                            samples: left.count, planes: p.baseAddress!))
                    }
                }
            }
        }
        XCTAssertTrue(silent(16, [0, 0, 1, -1], [0, 0, 0, 0]))
        XCTAssertFalse(silent(16, [0, 0, 0, 0], [0, 2, 0, 0]), "the second channel counts")
        XCTAssertFalse(silent(16, [0, -2, 0, 0], [0, 0, 0, 0]))
        XCTAssertTrue(silent(24, [256, -256, 0, 0], [0, 0, 0, 0]))
        XCTAssertFalse(silent(24, [257, 0, 0, 0], [0, 0, 0, 0]))
        XCTAssertTrue(silent(8, [0, 0, 0, 0], [0, 0, 0, 0]))
        XCTAssertFalse(silent(8, [1, 0, 0, 0], [0, 0, 0, 0]), "a step of 8 bits is heard")
        XCTAssertFalse(silent(16, [], []), "no samples: not silence")
    }
}
