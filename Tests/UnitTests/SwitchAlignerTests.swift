@testable import Audio
import XCTest

/// Lining a second connection up with what the first plays (make before break, #24): the real
/// frames of a capture of the rig's Ogg mount (Fuzz/corpus/stream) paged as another connection
/// would see them, and its native mount as captured, decoded by libFLAC from the start the
/// aligner gives; made-up streams for the refusals.
final class SwitchAlignerTests: XCTestCase {
    /// The first sample of every frame libFLAC decodes from `bytes`.
    static func frameStarts(_ bytes: [UInt8], ogg: Bool) -> [Int64] {
        var starts: [Int64] = []
        var offset = 0
        let decoder = FLACDecoder(container: ogg ? .ogg : .native, read: { buf in
            let n = min(buf.count, bytes.count - offset)
            guard n > 0 else { return .end }
            bytes.withUnsafeBytes { buf.baseAddress!.copyMemory(from: $0.baseAddress! + offset, byteCount: n) }
            offset += n
            return .bytes(n)
        }, frame: { f in starts.append(f.firstSample); return true }, corruption: {})
        _ = decoder?.run()
        return starts
    }

    static func pages(_ bytes: [UInt8]) -> [OggPage] {
        var splitter = OggPageSplitter()
        splitter.feed(bytes)
        var pages: [OggPage] = []
        while let p = splitter.next() { pages.append(p) }
        return pages
    }

    /// An Ogg page (RFC 3533) of `pieces`; a piece whose length is a multiple of 255 and that
    /// is marked open goes on on the next page.
    /// The capture's logical stream (libFLAC follows the first serial it sees).
    static func serial() throws -> [UInt8] { Array(try BurstSkipTests.capture("ogg-join.bin")[14..<18]) }

    static func page(sequence: UInt32, granule: Int64, continued: Bool = false, pieces: [[UInt8]], openLast: Bool = false) throws -> [UInt8] {
        var lacing: [UInt8] = []
        for (i, p) in pieces.enumerated() {
            lacing += [UInt8](repeating: 255, count: p.count / 255)
            if !(openLast && i == pieces.count - 1) { lacing.append(UInt8(p.count % 255)) }
        }
        var b: [UInt8] = Array("OggS".utf8) + [0, continued ? 1 : 0]
        b += (0..<8).map { UInt8(truncatingIfNeeded: UInt64(bitPattern: granule) >> (8 * UInt64($0))) }
        b += try serial()
        b += (0..<4).map { UInt8(truncatingIfNeeded: sequence >> (8 * UInt32($0))) }
        b += [0, 0, 0, 0, UInt8(lacing.count)] + lacing + pieces.flatMap { $0 }
        var crc: UInt32 = 0
        for v in b {
            var r = (crc >> 24 ^ UInt32(v)) << 24
            for _ in 0..<8 { r = r & 0x8000_0000 != 0 ? (r << 1) ^ 0x04C1_1DB7 : r << 1 }
            crc = (crc << 8) ^ r
        }
        for k in 0..<4 { b[22 + k] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(k))) }
        return b
    }

    /// The capture's header pages and its four real frames (364 032 + k × 4608).
    static func oggParts() throws -> (headers: [UInt8], frames: [[UInt8]]) {
        let pages = Self.pages(try BurstSkipTests.capture("ogg-join.bin"))
        let audio = pages[2].bytes
        let segments = Int(audio[26])
        var frames: [[UInt8]] = []
        var at = 27 + segments, current: [UInt8] = []
        for k in 0..<segments {
            let lace = Int(audio[27 + k])
            current += audio[at..<(at + lace)]
            at += lace
            if lace < 255 { frames.append(current); current = [] }
        }
        return (pages[0].bytes + pages[1].bytes, frames)
    }

    static let first: Int64 = 364_032

    func testOggLinesUpAtAFrameThatStartsInsideAPageAndDecodesFromThere() throws {
        let (headers, f) = try Self.oggParts()
        XCTAssertEqual(f.count, 4)
        // Frame 1 runs over from page X onto page Y (a 255-byte multiple on X).
        let cut = f[1].count / 255 * 255
        let x = try Self.page(sequence: 7, granule: Self.first + 4608, pieces: [f[0], Array(f[1][..<cut])], openLast: true)
        let y = try Self.page(sequence: 8, granule: Self.first + 3 * 4608, continued: true, pieces: [Array(f[1][cut...]), f[2]])
        let z = try Self.page(sequence: 9, granule: Self.first + 4 * 4608, pieces: [f[3]])
        XCTAssertEqual(OggPage(bytes: y, serial: 0, beginsStream: false).firstFrame?.firstSample, Self.first + 2 * 4608,
                       "the frame continued from X is not the first to begin on Y")
        var aligner = SwitchAligner(ogg: true, maxBytes: 1 << 20, maxApartSamples: 44100 * 60)
        // X alone: frame 1 begins on it but runs over (the rest still coming): wait.
        aligner.feed(headers + x)
        XCTAssertEqual(aligner.verdict(at: Self.first + 4608, sampleRate: 44100), .wait)
        guard case .ready = aligner.verdict(at: Self.first, sampleRate: 44100) else { return XCTFail("frame 0 is whole on X") }
        aligner = SwitchAligner(ogg: true, maxBytes: 1 << 20, maxApartSamples: 44100 * 60)
        // Fed in small pieces, as a ring is drained.
        let stream = headers + x + y + z
        for chunk in stride(from: 0, to: stream.count, by: 1000) { aligner.feed(stream[chunk..<min(stream.count, chunk + 1000)]) }
        // Frame 1 begins on X: from the header pages and X on.
        guard case .ready(let p1) = aligner.verdict(at: Self.first + 4608, sampleRate: 44100) else { return XCTFail() }
        XCTAssertEqual(p1, headers + x + y + z)
        XCTAssertEqual(Self.frameStarts(p1, ogg: true).filter { $0 >= Self.first + 4608 }.first, Self.first + 4608)
        // Frame 2 begins on Y (after the end of frame 1): from Y, without X.
        guard case .ready(let p2) = aligner.verdict(at: Self.first + 2 * 4608, sampleRate: 44100) else { return XCTFail() }
        XCTAssertEqual(p2, headers + y + z)
        XCTAssertEqual(Self.frameStarts(p2, ogg: true), [Self.first + 2 * 4608, Self.first + 3 * 4608],
                       "libogg drops the piece of frame 1 that Y begins with")
        // Frame 3 begins on the newest page, whose granule says it completes it: from Z, as soon
        // as Z is whole (the old connection's decoder takes the same page as soon as it is).
        guard case .ready(let p3) = aligner.verdict(at: Self.first + 3 * 4608, sampleRate: 44100) else { return XCTFail() }
        XCTAssertEqual(p3, headers + z)
        XCTAssertEqual(Self.frameStarts(p3, ogg: true), [Self.first + 3 * 4608])
        // Past it (the new connection a moment behind, or still coming): wait.
        XCTAssertEqual(aligner.verdict(at: Self.first + 4 * 4608, sampleRate: 44100), .wait)
        XCTAssertEqual(aligner.verdict(at: Self.first + 10 * 4608, sampleRate: 44100), .wait)
        // Before all of it, within reach (what plays catches up): wait.
        XCTAssertEqual(aligner.verdict(at: Self.first - 4608, sampleRate: 44100), .wait)
    }

    func testOggWithoutHeaderPagesOrFarApartOrAtAnotherRateIsRefused() throws {
        let (headers, f) = try Self.oggParts()
        let x = try Self.page(sequence: 7, granule: Self.first + 2 * 4608, pieces: [f[0], f[1]])
        let y = try Self.page(sequence: 8, granule: Self.first + 4 * 4608, pieces: [f[2], f[3]])
        var bare = SwitchAligner(ogg: true, maxBytes: 1 << 20, maxApartSamples: 44100 * 60)
        bare.feed(x + y)
        guard case .impossible(let why) = bare.verdict(at: Self.first, sampleRate: 44100) else { return XCTFail() }
        XCTAssertTrue(why.contains("headers"), why)
        var aligner = SwitchAligner(ogg: true, maxBytes: 1 << 20, maxApartSamples: 44100 * 5)
        aligner.feed(headers + x + y)
        XCTAssertEqual(aligner.verdict(at: Self.first, sampleRate: 44100), .ready(prefix: headers + x + y))
        // An encoder restarted: what plays is hours from what the new connection has.
        guard case .impossible = aligner.verdict(at: Self.first + 44100 * 3600, sampleRate: 44100) else { return XCTFail() }
        guard case .impossible = aligner.verdict(at: 4608, sampleRate: 44100) else { return XCTFail() }
        guard case .impossible(let rate) = aligner.verdict(at: Self.first, sampleRate: 48000) else { return XCTFail() }
        XCTAssertTrue(rate.contains("44100 Hz"), rate)
    }

    func testNativeCaptureLinesUpAtTheFrameItselfAndDecodesFromIt() throws {
        let bytes = try BurstSkipTests.capture("native-join.bin")
        let headers = BurstSkip.frameHeaders(bytes)
        var aligner = SwitchAligner(ogg: false, maxBytes: 1 << 20, maxApartSamples: 44100 * 60)
        for chunk in stride(from: 0, to: bytes.count, by: 700) { aligner.feed(bytes[chunk..<min(bytes.count, chunk + 700)]) }
        let s = headers[2].firstSample
        guard case .ready(let prefix) = aligner.verdict(at: s, sampleRate: 44100) else { return XCTFail() }
        XCTAssertEqual(prefix, Array(bytes[headers[2].offset...]))
        XCTAssertEqual(Self.frameStarts(prefix, ogg: false).first, s, "libFLAC's first frame is the one asked for")
        // Between two frames' starts: these are not the frames that play.
        guard case .impossible(let why) = aligner.verdict(at: s + 100, sampleRate: 44100) else { return XCTFail() }
        XCTAssertTrue(why.contains("do not begin"), why)
        // The newest frame may still be arriving: wait for the one after it.
        XCTAssertEqual(aligner.verdict(at: headers[headers.count - 1].firstSample, sampleRate: 44100), .wait)
        XCTAssertEqual(aligner.verdict(at: headers[0].firstSample - 4608, sampleRate: 44100), .wait)
    }

    func testNativeFalseSyncDoesNotMoveTheStartAndHoldingTooMuchGivesUp() {
        // Made-up frames of 4096 samples with a false sync (frame 100) inside frame 3's audio.
        var bytes: [UInt8] = [1, 2, 3]
        var offsets: [Int] = []
        for n in 0..<8 {
            offsets.append(bytes.count)
            bytes += BurstSkipTests.header(frame: n) + [UInt8](repeating: 0x11, count: 40)
            if n == 3 { bytes += BurstSkipTests.header(frame: 100) + [0x22] }
        }
        var aligner = SwitchAligner(ogg: false, maxBytes: 1 << 20, maxApartSamples: 44100 * 60)
        aligner.feed(bytes)
        XCTAssertEqual(aligner.verdict(at: 4 * 4096, sampleRate: 44100), .ready(prefix: Array(bytes[offsets[4]...])))
        XCTAssertEqual(aligner.verdict(at: 100 * 4096, sampleRate: 44100), .wait, "the false sync is no frame")
        var small = SwitchAligner(ogg: false, maxBytes: 200, maxApartSamples: 44100 * 60)
        small.feed(bytes)
        guard case .impossible(let why) = small.verdict(at: 4 * 4096, sampleRate: 44100) else { return XCTFail() }
        XCTAssertTrue(why.contains("KB"), why)
    }
}
