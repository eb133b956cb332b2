@testable import Audio
import Foundation
import XCTest

/// Where the join starts decoding Icecast's burst, from positions in the bytes (real captures
/// from the rig's mounts, Fuzz/corpus/stream, and made-up positions).
final class BurstSkipTests: XCTestCase {
    static func capture(_ name: String) throws -> [UInt8] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return [UInt8](try Data(contentsOf: root.appendingPathComponent("Fuzz/corpus/stream/\(name)")))
    }

    /// A fixed-block-size header (4096 samples, 44.1 kHz, stereo, 16-bit) for frame `n`.
    static func header(frame n: Int) -> [UInt8] {
        precondition(n < 128)
        var h: [UInt8] = [0xFF, 0xF8, 0xC9, 0x18, UInt8(n)]
        h.append(BurstSkip.crc8(h, 0, h.count))
        return h
    }

    func testAFrameHeaderIsReadAndItsCRCChecked() {
        let h = Self.header(frame: 5)
        XCTAssertEqual(BurstSkip.frameHeader(h, at: 0),
                       BurstSkip.FrameHeader(offset: 0, firstSample: 5 * 4096, blockSize: 4096, sampleRate: 44100))
        var bad = h
        bad[5] ^= 1
        XCTAssertNil(BurstSkip.frameHeader(bad, at: 0), "a CRC-8 mismatch is not a header")
    }

    func testNativeStartKeepsHalfASecondAndPassesOverFalseSyncs() {
        // Ten frames of 93 ms with filler between; a false sync (a valid-looking header of
        // frame 100) sits inside frame 7's audio.
        var bytes: [UInt8] = [1, 2, 3]
        var offsets: [Int] = []
        for n in 0..<10 {
            offsets.append(bytes.count)
            bytes += Self.header(frame: n) + [UInt8](repeating: 0x11, count: 50)
            if n == 7 { bytes += Self.header(frame: 100) + [0x22] }
        }
        let start = BurstSkip.nativeStart(bytes, keepMs: 500)
        // The newest whole frame (8) ends at 9 × 4096; 500 ms is 22 050 samples: frame 3 starts
        // 24 576 before.
        XCTAssertEqual(start?.offset, offsets[3])
        XCTAssertEqual(start?.skippedSamples, 3 * 4096)
        XCTAssertNil(BurstSkip.nativeStart(Array(bytes[offsets[7]...]), keepMs: 500), "too little to skip any")
    }

    func testNativeCaptureDecodesFromTheStartFound() throws {
        let bytes = try Self.capture("native-middle.bin")
        let headers = BurstSkip.frameHeaders(bytes)
        XCTAssertGreaterThan(headers.count, 5)
        XCTAssertTrue(headers.allSatisfy { $0.sampleRate == 44100 }, "\(headers)")
        let start = try XCTUnwrap(BurstSkip.nativeStart(bytes, keepMs: 300))
        XCTAssertGreaterThan(start.offset, 0)
        // libFLAC decodes from there without losing sync, and at least the keep comes out.
        let figures = try XCTUnwrap(DecodeBenchmark.run(file: Array(bytes[start.offset...]), ogg: false))
        XCTAssertGreaterThanOrEqual(figures.samples, 300 * 44100 / 1000)
    }

    func testOggStartCutsAfterTheLastPageFarEnoughBack() {
        // Pages of 1000 samples each, one page that ends no packet (−1).
        let granules: [Int64] = [5000, 6000, 7000, -1, 8000, 9000, 10000]
        XCTAssertEqual(BurstSkip.oggStart(granules: granules, keepSamples: 2500).index, 3, "from the page after 7000")
        XCTAssertEqual(BurstSkip.oggStart(granules: granules, keepSamples: 2500).skippedSamples, 2000)
        XCTAssertEqual(BurstSkip.oggStart(granules: granules, keepSamples: 3000).index, 3)
        XCTAssertEqual(BurstSkip.oggStart(granules: granules, keepSamples: 9000).index, 0, "too little: all")
        XCTAssertEqual(BurstSkip.oggStart(granules: [-1, -1], keepSamples: 10).index, 0)
    }

    func testOggCapturePagesCarryGranulesAndTheirRate() throws {
        var splitter = OggPageSplitter()
        splitter.feed(try Self.capture("ogg-join.bin"))
        var pages: [OggPage] = []
        while let p = splitter.next() { pages.append(p) }
        XCTAssertGreaterThanOrEqual(pages.count, 3)
        // Icecast sends the stream's header pages (granule 0) first, then its burst.
        XCTAssertEqual(pages[0].granule, 0)
        XCTAssertEqual(pages[0].frameSampleRate, 0, "a header page begins no frame")
        let audio = pages.filter { $0.granule > 0 }
        XCTAssertFalse(audio.isEmpty)
        XCTAssertTrue(audio.allSatisfy { $0.frameSampleRate == 44100 })
    }
}
