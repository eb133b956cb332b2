@testable import Audio
import Foundation
import XCTest

/// Bytes cut into whole FLAC units (`FrameReader`): frame headers read and checked, Ogg packets
/// put together across pages, native frames cut at their headers; where the join starts decoding
/// a burst (`Playout.joinStart`), from real captures of the rig's mounts (Fuzz/corpus/stream)
/// and made-up positions.
final class FrameReaderTests: XCTestCase {
    static func capture(_ name: String) throws -> [UInt8] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return [UInt8](try Data(contentsOf: root.appendingPathComponent("Fuzz/corpus/stream/\(name)")))
    }

    /// A fixed-block-size header (4096 samples, 44.1 kHz or `rateCode`'s, stereo, 16-bit) for frame `n`.
    static func header(frame n: Int, rateCode: UInt8 = 9) -> [UInt8] {
        precondition(n < 128)
        var h: [UInt8] = [0xFF, 0xF8, 0xC0 | rateCode, 0x18, UInt8(n)]
        h.append(FrameReader.crc8(h, 0, h.count))
        return h
    }

    /// Every unit `bytes` holds, fed in pieces of `piece`; `finish`: the bytes end there.
    static func units(_ bytes: [UInt8], ogg: Bool, piece: Int = 700, finish: Bool = false) -> [FrameReader.Unit] {
        var r = FrameReader(ogg: ogg)
        var out: [FrameReader.Unit] = []
        for at in stride(from: 0, to: bytes.count, by: piece) {
            r.feed(bytes[at..<min(bytes.count, at + piece)], arrival: Instant(ms: at))
            while let u = r.next() { out.append(u) }
        }
        if finish { r.finish() }
        while let u = r.next() { out.append(u) }
        return out
    }

    static func frames(_ units: [FrameReader.Unit]) -> [(first: Int64, end: Int64)] {
        units.compactMap { $0.header.map { ($0.firstSample, $0.end) } }
    }

    func testAFrameHeaderIsReadAndItsCRCChecked() {
        let h = Self.header(frame: 5)
        XCTAssertEqual(FrameReader.header(h, at: 0), FrameReader.Header(firstSample: 5 * 4096, blockSize: 4096, sampleRate: 44100))
        var bad = h
        bad[5] ^= 1
        XCTAssertNil(FrameReader.header(bad, at: 0), "a CRC-8 mismatch is not a header")
    }

    /// Native frames end where the next header begins, the newest when the bytes end; what comes
    /// before the first header (a frame the connection joined within) is no unit.
    func testNativeFramesAreCutAtTheirHeaders() {
        var bytes: [UInt8] = [1, 2, 3]
        for n in 0..<4 { bytes += Self.header(frame: n) + [UInt8](repeating: 0x11, count: 50) }
        let open = Self.units(bytes, ogg: false, piece: 7)
        XCTAssertEqual(open.compactMap(\.header?.firstSample), [0, 4096, 8192], "the newest waits for the next header")
        XCTAssertEqual(open.map(\.bytes.count), [56, 56, 56])
        XCTAssertEqual(open.first?.arrival, Instant(ms: 56), "dated by the piece its last byte came in")
        let all = Self.units(bytes, ogg: false, piece: 7, finish: true)
        XCTAssertEqual(all.compactMap(\.header?.firstSample), [0, 4096, 8192, 12288])
        // From the start: `fLaC` and its metadata blocks, to the one marked last, are one unit.
        let metadata: [UInt8] = Array("fLaC".utf8) + [0x00, 0, 0, 2, 9, 9] + [0x84, 0, 0, 1, 7]
        let fromStart = Self.units(metadata + bytes.dropFirst(3), ogg: false, piece: 5, finish: true)
        XCTAssertEqual(fromStart.first, FrameReader.Unit(kind: .metadata, bytes: metadata, arrival: Instant(ms: 10)))
        XCTAssertEqual(fromStart.count, 5)
    }

    func testTheJoinKeepsHalfASecondAndPassesOverFalseSyncs() {
        // Ten frames of 93 ms with filler between; a false sync (a valid-looking header of
        // frame 100, at 48 kHz) sits inside frame 7's audio: native cuts a unit there.
        var bytes: [UInt8] = [1, 2, 3]
        for n in 0..<10 {
            bytes += Self.header(frame: n) + [UInt8](repeating: 0x11, count: 50)
            if n == 7 { bytes += Self.header(frame: 100, rateCode: 10) + [0x22] }
        }
        let units = Self.units(bytes, ogg: false)
        XCTAssertEqual(units.compactMap(\.header?.firstSample).map { $0 / 4096 }, [0, 1, 2, 3, 4, 5, 6, 7, 100, 8])
        let start = Playout.joinStart(Self.frames(units), keepSamples: 22_050)
        // The newest whole frame (8) ends at 9 × 4096; 500 ms is 22 050 samples: frame 3 starts
        // 24 576 before.
        XCTAssertEqual(start.index, 3)
        XCTAssertEqual(start.skippedSamples, 3 * 4096)
        XCTAssertEqual(Playout.joinStart(Self.frames(Array(units[7...])), keepSamples: 22_050).index, 0, "too little to skip any")
    }

    func testTheJoinStartsFromTheNewestFrameFarEnoughBack() {
        // Frames of 1000 samples.
        let frames: [(first: Int64, end: Int64)] = (4...9).map { (Int64($0) * 1000, Int64($0 + 1) * 1000) }
        XCTAssertEqual(Playout.joinStart(frames, keepSamples: 2500).index, 3, "from the frame 3000 before the end")
        XCTAssertEqual(Playout.joinStart(frames, keepSamples: 2500).skippedSamples, 3000)
        XCTAssertEqual(Playout.joinStart(frames, keepSamples: 3000).index, 3)
        XCTAssertEqual(Playout.joinStart(frames, keepSamples: 9000).index, 0, "too little: all")
        XCTAssertEqual(Playout.joinStart([], keepSamples: 10).index, 0)
    }

    func testNativeCaptureDecodesFromTheJoinsStart() throws {
        let bytes = try Self.capture("native-middle.bin")
        let units = Self.units(bytes, ogg: false)
        XCTAssertGreaterThan(units.count, 5)
        XCTAssertTrue(units.allSatisfy { $0.header?.sampleRate == 44100 }, "\(units.map(\.kind))")
        let start = Playout.joinStart(Self.frames(units), keepSamples: 300 * 44100 / 1000)
        XCTAssertGreaterThan(start.index, 0)
        // libFLAC decodes from there without losing sync, and at least the keep comes out.
        let from = units[start.index...].flatMap(\.bytes)
        let figures = try XCTUnwrap(PCMConverter.Benchmark.run(file: from, ogg: false))
        XCTAssertGreaterThanOrEqual(figures.samples, 300 * 44100 / 1000)
    }

    func testOggCaptureGivesTheHeadersThenFramesAndTheirRate() throws {
        let units = Self.units(try Self.capture("ogg-join.bin"), ogg: true)
        // Icecast sends the stream's header pages first, then its burst.
        XCTAssertEqual(units.first?.kind, .metadata)
        XCTAssertEqual(Array(units.first?.bytes.prefix(4) ?? []), Array("fLaC".utf8), "the mapping's preamble is left out")
        let frames = units.compactMap(\.header)
        XCTAssertFalse(frames.isEmpty)
        XCTAssertTrue(frames.allSatisfy { $0.sampleRate == 44100 })
        XCTAssertEqual(zip(frames, frames.dropFirst()).filter { $0.end != $1.firstSample }.count, 0, "one after the other")
    }

    // MARK: - Ogg packets across pages

    /// The capture's logical stream (libFLAC follows the first serial it sees).
    static func serial() throws -> [UInt8] { Array(try capture("ogg-join.bin")[14..<18]) }

    /// An Ogg page (RFC 3533) of `pieces`, with its CRC; a piece whose length is a multiple of 255
    /// and that is marked open goes on on the next page.
    static func page(sequence: UInt32, granule: Int64, continued: Bool = false, bos: Bool = false, pieces: [[UInt8]],
                     openLast: Bool = false) throws -> [UInt8] {
        var lacing: [UInt8] = []
        for (i, p) in pieces.enumerated() {
            lacing += [UInt8](repeating: 255, count: p.count / 255)
            if !(openLast && i == pieces.count - 1) { lacing.append(UInt8(p.count % 255)) }
        }
        var b: [UInt8] = Array("OggS".utf8) + [0, (continued ? 1 : 0) | (bos ? 2 : 0)]
        b += (0..<8).map { UInt8(truncatingIfNeeded: UInt64(bitPattern: granule) >> (8 * UInt64($0))) }
        b += try serial()
        b += (0..<4).map { UInt8(truncatingIfNeeded: sequence >> (8 * UInt32($0))) }
        b += [0, 0, 0, 0, UInt8(lacing.count)] + lacing + pieces.flatMap { $0 }
        return withCRC(b)
    }

    /// An Ogg page's bytes with its CRC (RFC 3533: CRC-32, polynomial 0x04C11DB7, over the page
    /// with the CRC field zeroed) written in.
    static func withCRC(_ page: [UInt8]) -> [UInt8] {
        var b = page
        b.replaceSubrange(22..<26, with: [0, 0, 0, 0])
        var crc: UInt32 = 0
        for v in b {
            var r = (crc >> 24 ^ UInt32(v)) << 24
            for _ in 0..<8 { r = r & 0x8000_0000 != 0 ? (r << 1) ^ 0x04C1_1DB7 : r << 1 }
            crc = (crc << 8) ^ r
        }
        for k in 0..<4 { b[22 + k] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(k))) }
        return b
    }

    /// The first header packet loses its 9-byte mapping preamble; a packet continued from the
    /// page before in sequence is kept whole; one continued after a gap (a page lost or corrupt)
    /// is left out, and what follows it goes on.
    func testOggPacketsAreKeptWholeOnlyAcrossPagesInSequence() throws {
        let streamInfo: [UInt8] = Array("fLaC".utf8) + [0x80, 0, 0, 34] + [UInt8](repeating: 9, count: 34)
        let bos = try Self.page(sequence: 0, granule: 0, bos: true, pieces: [[0x7F] + Array("FLAC".utf8) + [1, 0, 0, 0] + streamInfo])
        let head = Self.header(frame: 2) + [UInt8](repeating: 1, count: 249), tail: [UInt8] = [2, 2]
        let frame = Self.header(frame: 3) + [7]
        let opens = try Self.page(sequence: 5, granule: -1, pieces: [head], openLast: true)
        let ends = try Self.page(sequence: 6, granule: 4096, continued: true, pieces: [tail, frame])
        let inOrder = Self.units(bos + opens + ends, ogg: true)
        XCTAssertEqual(inOrder.map(\.bytes), [streamInfo, head + tail, frame])
        XCTAssertEqual(inOrder.first?.kind, .metadata)
        let endsAfterAGap = try Self.page(sequence: 7, granule: 4096, continued: true, pieces: [tail, frame])
        XCTAssertEqual(Self.units(bos + opens + endsAfterAGap, ogg: true).map(\.bytes), [streamInfo, frame])
        var corrupt = ends
        corrupt[corrupt.count - 1] ^= 1
        var r = FrameReader(ogg: true)
        r.feed(bos + opens + corrupt, arrival: 0)
        XCTAssertEqual(r.readyCount, 1, "the header packet only: the page with the packet's end failed its CRC")
        XCTAssertEqual(r.lostSync, 1)
    }

    /// A new logical stream (chained Ogg) is told, so that libFLAC starts afresh.
    func testAChainedStreamIsTold() throws {
        let capture = try Self.capture("ogg-join.bin")
        let units = Self.units(Self.serialised(serial: try Self.serial(), capture) + Self.serialised(serial: [9, 9, 9, 9], capture), ogg: true)
        XCTAssertEqual(units.filter { $0.kind == .newStream }.count, 1)
        XCTAssertEqual(units.firstIndex { $0.kind == .newStream }.map { units[$0 + 1].kind }, .metadata, "its headers follow")
    }

    /// `bytes` (whole Ogg pages) with the serial number `serial`, their CRCs made again.
    static func serialised(serial: [UInt8], _ bytes: [UInt8]) -> [UInt8] {
        var splitter = OggPage.Splitter()
        splitter.feed(bytes)
        var out: [UInt8] = []
        while let p = splitter.next() {
            var b = p.bytes
            b.replaceSubrange(14..<18, with: serial)
            out += withCRC(b)
        }
        return out
    }
}
