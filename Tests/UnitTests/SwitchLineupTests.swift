@testable import Audio
import XCTest

/// Lining a second connection up with what the first plays (make before break): the real frames
/// of a capture of the rig's Ogg mount (Fuzz/corpus/stream) paged as another connection would
/// see them, and its native mount as captured, decoded by libFLAC from the frame the lineup
/// gives; made-up streams for the refusals.
final class SwitchLineupTests: XCTestCase {
    typealias Lineup = SwitchAttempt.Lineup

    /// The first sample of every frame libFLAC decodes from `units`.
    static func frameStarts(_ units: [FrameReader.Unit]) -> [Int64] {
        var starts: [Int64] = []
        var input = FLACDecoder.Input(units)
        guard let decoder = FLACDecoder(corruption: {}) else { return [] }
        while let outcome = decoder.step(&input, frame: { f, _ in starts.append(f.firstSample) }) {
            if case .failed = outcome { break }
        }
        return starts
    }

    /// What the lineup decodes from its frame `k` on.
    static func from(_ l: Lineup, _ k: Int) -> [FrameReader.Unit] { l.metadata + l.frames[k...] }

    static func pages(_ bytes: [UInt8]) -> [OggPage] {
        var splitter = OggPage.Splitter()
        splitter.feed(bytes)
        var pages: [OggPage] = []
        while let p = splitter.next() { pages.append(p) }
        return pages
    }

    /// The capture's header pages and its four real frames (364 032 + k × 4608).
    static func oggParts() throws -> (headers: [UInt8], frames: [[UInt8]]) {
        let pages = Self.pages(try FrameReaderTests.capture("ogg-join.bin"))
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

    func testOggLinesUpAtAFrameThatRunsAcrossPagesAndDecodesFromThere() throws {
        let (headers, f) = try Self.oggParts()
        XCTAssertEqual(f.count, 4)
        // Frame 1 runs over from page X onto page Y (a 255-byte multiple on X).
        let cut = f[1].count / 255 * 255
        let x = try FrameReaderTests.page(sequence: 7, granule: Self.first + 4608, pieces: [f[0], Array(f[1][..<cut])], openLast: true)
        let y = try FrameReaderTests.page(sequence: 8, granule: Self.first + 3 * 4608, continued: true, pieces: [Array(f[1][cut...]), f[2]])
        let z = try FrameReaderTests.page(sequence: 9, granule: Self.first + 4 * 4608, pieces: [f[3]])
        var lineup = Lineup(ogg: true, maxBytes: 1 << 20, maxApartSamples: 44100 * 60)
        // X alone: frame 1 begins on it but runs over (the rest still coming): wait.
        lineup.feed(headers + x, arrival: 0)
        XCTAssertEqual(lineup.verdict(at: Self.first + 4608, sampleRate: 44100), .wait)
        XCTAssertEqual(lineup.verdict(at: Self.first, sampleRate: 44100), .ready(index: 0), "frame 0 is whole on X")
        lineup = Lineup(ogg: true, maxBytes: 1 << 20, maxApartSamples: 44100 * 60)
        // Fed in small pieces, as a ring is drained.
        let stream = headers + x + y + z
        for chunk in stride(from: 0, to: stream.count, by: 1000) {
            lineup.feed(stream[chunk..<min(stream.count, chunk + 1000)], arrival: Instant(ms: chunk))
        }
        // Frame 1 begins on X and ends on Y: from it, whole.
        XCTAssertEqual(lineup.verdict(at: Self.first + 4608, sampleRate: 44100), .ready(index: 1))
        XCTAssertEqual(Self.frameStarts(Self.from(lineup, 1)), [1, 2, 3].map { Self.first + $0 * 4608 })
        // Frame 2 begins on Y after the end of frame 1: from it, without frame 1.
        XCTAssertEqual(lineup.verdict(at: Self.first + 2 * 4608, sampleRate: 44100), .ready(index: 2))
        XCTAssertEqual(Self.frameStarts(Self.from(lineup, 2)), [Self.first + 2 * 4608, Self.first + 3 * 4608])
        // Frame 3, on the newest page: as soon as Z is whole (the old connection's decoder takes
        // the same frame as soon as it is).
        XCTAssertEqual(lineup.verdict(at: Self.first + 3 * 4608, sampleRate: 44100), .ready(index: 3))
        XCTAssertEqual(Self.frameStarts(Self.from(lineup, 3)), [Self.first + 3 * 4608])
        // Past it (the new connection a moment behind, or still coming): wait.
        XCTAssertEqual(lineup.verdict(at: Self.first + 4 * 4608, sampleRate: 44100), .wait)
        XCTAssertEqual(lineup.verdict(at: Self.first + 10 * 4608, sampleRate: 44100), .wait)
        // Before all of it, within reach (what plays catches up): wait.
        XCTAssertEqual(lineup.verdict(at: Self.first - 4608, sampleRate: 44100), .wait)
    }

    func testOggWithoutHeaderPagesOrFarApartOrAtAnotherRateIsRefused() throws {
        let (headers, f) = try Self.oggParts()
        let x = try FrameReaderTests.page(sequence: 7, granule: Self.first + 2 * 4608, pieces: [f[0], f[1]])
        let y = try FrameReaderTests.page(sequence: 8, granule: Self.first + 4 * 4608, pieces: [f[2], f[3]])
        var bare = Lineup(ogg: true, maxBytes: 1 << 20, maxApartSamples: 44100 * 60)
        bare.feed(x + y, arrival: 0)
        guard case .impossible(let why) = bare.verdict(at: Self.first, sampleRate: 44100) else { return XCTFail() }
        XCTAssertTrue(why.contains("headers"), why)
        var lineup = Lineup(ogg: true, maxBytes: 1 << 20, maxApartSamples: 44100 * 5)
        lineup.feed(headers + x + y, arrival: 0)
        XCTAssertEqual(lineup.verdict(at: Self.first, sampleRate: 44100), .ready(index: 0))
        XCTAssertEqual(Self.frameStarts(Self.from(lineup, 0)), (0..<4).map { Self.first + $0 * 4608 })
        // An encoder restarted: what plays is hours from what the new connection has.
        guard case .impossible = lineup.verdict(at: Self.first + 44100 * 3600, sampleRate: 44100) else { return XCTFail() }
        guard case .impossible = lineup.verdict(at: 4608, sampleRate: 44100) else { return XCTFail() }
        guard case .impossible(let rate) = lineup.verdict(at: Self.first, sampleRate: 48000) else { return XCTFail() }
        XCTAssertTrue(rate.contains("44100 Hz"), rate)
    }

    func testNativeCaptureLinesUpAtTheFrameItselfAndDecodesFromIt() throws {
        let bytes = try FrameReaderTests.capture("native-join.bin")
        var lineup = Lineup(ogg: false, maxBytes: 1 << 20, maxApartSamples: 44100 * 60)
        for chunk in stride(from: 0, to: bytes.count, by: 700) {
            lineup.feed(bytes[chunk..<min(bytes.count, chunk + 700)], arrival: Instant(ms: chunk))
        }
        let headers = lineup.frames.compactMap(\.header)
        XCTAssertGreaterThan(headers.count, 4)
        let s = headers[2].firstSample
        XCTAssertEqual(lineup.verdict(at: s, sampleRate: 44100), .ready(index: 2))
        XCTAssertEqual(Self.frameStarts(Self.from(lineup, 2)).first, s, "libFLAC's first frame is the one asked for")
        // Between two frames' starts: these are not the frames that play.
        guard case .impossible(let why) = lineup.verdict(at: s + 100, sampleRate: 44100) else { return XCTFail() }
        XCTAssertTrue(why.contains("do not begin"), why)
        // The newest frame held may be cut at a false sync: wait for the one after it.
        XCTAssertEqual(lineup.verdict(at: headers[headers.count - 1].firstSample, sampleRate: 44100), .wait)
        XCTAssertEqual(lineup.verdict(at: headers[0].firstSample - 4608, sampleRate: 44100), .wait)
    }

    func testNativeFalseSyncDoesNotMoveTheStartAndHoldingTooMuchGivesUp() {
        // Made-up frames of 4096 samples with a false sync (frame 100, at 48 kHz: not another
        // stream) inside frame 3's audio.
        var bytes: [UInt8] = [1, 2, 3]
        for n in 0..<8 {
            bytes += FrameReaderTests.header(frame: n) + [UInt8](repeating: 0x11, count: 40)
            if n == 3 { bytes += FrameReaderTests.header(frame: 100, rateCode: 10) + [0x22] }
        }
        var lineup = Lineup(ogg: false, maxBytes: 1 << 20, maxApartSamples: 44100 * 60)
        lineup.feed(bytes, arrival: 0)
        XCTAssertEqual(lineup.frames.compactMap(\.header?.firstSample).map { $0 / 4096 }, [0, 1, 2, 3, 100, 4, 5, 6])
        XCTAssertEqual(lineup.verdict(at: 4 * 4096, sampleRate: 44100), .ready(index: 5))
        XCTAssertEqual(lineup.verdict(at: 3 * 4096, sampleRate: 44100), .ready(index: 3), "frame 3 with its false sync, whole")
        XCTAssertEqual(lineup.verdict(at: 100 * 4096, sampleRate: 44100), .wait, "the false sync is no frame")
        var small = Lineup(ogg: false, maxBytes: 200, maxApartSamples: 44100 * 60)
        small.feed(bytes, arrival: 0)
        guard case .impossible(let why) = small.verdict(at: 4 * 4096, sampleRate: 44100) else { return XCTFail() }
        XCTAssertTrue(why.contains("KB"), why)
    }
}
