import Audio
import Glibc
import Support
import XCTest

final class ByteRingTests: XCTestCase {
    func write(_ ring: ByteRing, _ bytes: [UInt8]) {
        XCTAssertTrue(bytes.withUnsafeBytes { ring.write($0) })
    }

    func read(_ ring: ByteRing, _ n: Int) -> [UInt8] {
        var buf = [UInt8](repeating: 0, count: n)
        let r = buf.withUnsafeMutableBytes { ring.read(into: $0, deadlineMs: monotonicMs()) }
        guard case .bytes(let got) = r else { XCTFail("\(r)"); return [] }
        return Array(buf[0..<got])
    }

    /// The heard-now estimate needs to know when the bytes being decoded arrived, however long
    /// they waited in the ring.
    func testReadsReportWhenTheirLastByteArrived() {
        let ring = ByteRing(capacity: 64)
        let t0 = monotonicMs()
        write(ring, [1, 2, 3, 4])
        usleep(30_000)
        let t1 = monotonicMs()
        write(ring, [5, 6])
        XCTAssertEqual(read(ring, 3), [1, 2, 3])
        XCTAssertLessThan(ring.lastReadArrivalMs, t1, "bytes of the first write")
        XCTAssertGreaterThanOrEqual(ring.lastReadArrivalMs, t0)
        XCTAssertEqual(read(ring, 2), [4, 5])
        XCTAssertGreaterThanOrEqual(ring.lastReadArrivalMs, t1, "the last byte came with the second write")
        XCTAssertEqual(read(ring, 8), [6])
        XCTAssertGreaterThanOrEqual(ring.lastReadArrivalMs, t1)
    }

    /// A backlog read at once would date its oldest bytes by its newest: a read of one arrival
    /// holds only bytes that came together, each dated when it came.
    func testAReadOfOneArrivalStopsWhereTheNextArrivalBegins() {
        let ring = ByteRing(capacity: 64)
        write(ring, [1, 2, 3])
        let t0 = monotonicMs()
        while monotonicMs() <= t0 { usleep(1000) }  // the next write comes at a later ms
        let t1 = monotonicMs()
        write(ring, [4, 5])
        var buf = [UInt8](repeating: 0, count: 16)
        func readOne() -> [UInt8] {
            let r = buf.withUnsafeMutableBytes { ring.read(into: $0, deadlineMs: monotonicMs(), oneArrival: true) }
            guard case .bytes(let got) = r else { XCTFail("\(r)"); return [] }
            return Array(buf[0..<got])
        }
        XCTAssertEqual(readOne(), [1, 2, 3])
        XCTAssertLessThanOrEqual(ring.lastReadArrivalMs, t0, "dated by the first write")
        XCTAssertEqual(readOne(), [4, 5])
        XCTAssertGreaterThanOrEqual(ring.lastReadArrivalMs, t1)
        write(ring, [6, 7])
        XCTAssertEqual(read(ring, 16), [6, 7], "what came at once is read at once")
    }

    func testManyWritesAcrossTheWrapKeepOrderAndTimes() {
        let ring = ByteRing(capacity: 10)
        var expected: UInt8 = 0
        var next: UInt8 = 0
        for _ in 0..<2000 {
            write(ring, [next, next &+ 1, next &+ 2])
            next &+= 3
            var got: [UInt8] = []
            while got.count < 3 { got += read(ring, 3 - got.count) }  // a read stops at the wrap
            for b in got {
                XCTAssertEqual(b, expected)
                expected &+= 1
            }
            XCTAssertLessThanOrEqual(ring.lastReadArrivalMs, monotonicMs())
        }
        XCTAssertEqual(ring.fill, 0)
    }
}
