@testable import Audio
import XCTest

final class StreamSnifferTests: XCTestCase {
    let url = "http://127.0.0.1:8000/stream.flac"

    func testMagicAndContentType() {
        XCTAssertEqual(try StreamSniffer.classify(Array("fLaC\0\0\0\"".utf8), contentType: "audio/flac", url: url).get(), .nativeFLAC)
        XCTAssertEqual(try StreamSniffer.classify(Array("OggS\0\u{2}".utf8), contentType: "application/ogg", url: url).get(), .oggFLAC)
        // Icecast native mount joined late: arbitrary bytes, then frame headers.
        let mid: [UInt8] = [0x12, 0x34, 0xFF, 0xF8, 0x69, 0x08, 0, 0, 0xAB, 0xFF, 0xF8, 0x69, 0x08, 0, 1]
        XCTAssertEqual(try StreamSniffer.classify(mid, contentType: "audio/flac", url: url).get(), .nativeFLAC)
        guard case .failure(let e) = StreamSniffer.classify(Array("<!DOCTYPE html>".utf8), contentType: "text/html; charset=utf-8", url: url) else {
            return XCTFail("HTML accepted")
        }
        XCTAssertEqual(e.description, "stream at \(url) is not FLAC (Content-Type text/html; charset=utf-8, starts with \"<!DOCTYPE html>\")")
        // An MP3 mount is not FLAC even if bytes look like a FLAC frame sync.
        guard case .failure = StreamSniffer.classify(Array("ID3\u{3}".utf8) + mid, contentType: "audio/mpeg", url: url) else {
            return XCTFail("MP3 accepted")
        }
    }

    func page(serial: UInt32, bos: Bool, body: [UInt8]) -> [UInt8] {
        var p: [UInt8] = Array("OggS".utf8) + [0, bos ? 2 : 0] + [UInt8](repeating: 0, count: 8)
        p += (0..<4).map { UInt8(truncatingIfNeeded: serial >> (8 * $0)) }
        p += [0, 0, 0, 0, 0, 0, 0, 0, UInt8(1), UInt8(body.count)]
        p += body
        // CRC over the page with a zero CRC field.
        var crc: UInt32 = 0
        for b in p {
            crc ^= UInt32(b) << 24
            for _ in 0..<8 { crc = crc & 0x8000_0000 != 0 ? (crc << 1) ^ 0x04C1_1DB7 : crc << 1 }
        }
        for i in 0..<4 { p[22 + i] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(i))) }
        return p
    }

    /// A page with its own flags, sequence number and segment table (no CRC: not checked here).
    func rawPage(flags: UInt8, sequence: UInt32, lacing: [UInt8], body: [UInt8]) -> OggPage {
        var p: [UInt8] = Array("OggS".utf8) + [0, flags] + [UInt8](repeating: 0, count: 8) + [7, 0, 0, 0]
        p += (0..<4).map { UInt8(truncatingIfNeeded: sequence >> (8 * $0)) }
        p += [0, 0, 0, 0, UInt8(lacing.count)] + lacing + body
        var s = OggPageSplitter()
        s.feed(p)
        return s.next() ?? OggPage(bytes: p, serial: 7, beginsStream: flags & 2 != 0)
    }

    /// Pages in order through one unwrapper: a packet open at a page's end goes on whole into
    /// the next page in sequence; after a gap its tail is left out, and what follows goes on.
    func testTheUnwrapperKeepsAPacketWholeOnlyAcrossPagesInSequence() {
        let head = [UInt8](repeating: 1, count: 255), tail: [UInt8] = [2, 2], frame: [UInt8] = [0xFF, 0xF8, 0x01]
        let opens = rawPage(flags: 0, sequence: 5, lacing: [255], body: head)
        let ends = rawPage(flags: 1, sequence: 6, lacing: [2, 3], body: tail + frame)
        var inOrder = OggFLACUnwrapper()
        XCTAssertEqual(inOrder.flacBody(of: opens) + inOrder.flacBody(of: ends), head + tail + frame)
        let endsAfterAGap = rawPage(flags: 1, sequence: 7, lacing: [2, 3], body: tail + frame)
        var gap = OggFLACUnwrapper()
        XCTAssertEqual(gap.flacBody(of: opens) + gap.flacBody(of: endsAfterAGap), head + frame)
    }

    /// Ogg FLAC unwrapped to native FLAC: the first header packet loses its 9-byte mapping
    /// preamble; a packet continued from a page handed on just before is kept whole; one
    /// continued from a page not handed on (the join skipped it) is left out.
    func testOggPagesUnwrapToNativeFLAC() {
        let streamInfo: [UInt8] = Array("fLaC".utf8) + [0x00, 0, 0, 34] + [UInt8](repeating: 9, count: 34)
        let first = [0x7F] + Array("FLAC".utf8) + [1, 0, 0, 1] + streamInfo
        let bos = rawPage(flags: 2, sequence: 0, lacing: [UInt8(first.count)], body: first)
        XCTAssertEqual(bos.flacBody(afterPageBefore: false), streamInfo)
        XCTAssertEqual(bos.sequence, 0)
        // A page that ends a 300-byte packet (255 + 45) and holds a 3-byte one.
        let tail = [UInt8](repeating: 0xAA, count: 300), frame: [UInt8] = [0xFF, 0xF8, 0x01]
        let continued = rawPage(flags: 1, sequence: 41, lacing: [255, 45, 3], body: tail + frame)
        XCTAssertEqual(continued.sequence, 41)
        XCTAssertEqual(continued.flacBody(afterPageBefore: true), tail + frame)
        XCTAssertEqual(continued.flacBody(afterPageBefore: false), frame)
        // All of a page continued and not ended: nothing of it after a gap.
        let middle = rawPage(flags: 1, sequence: 42, lacing: [255], body: [UInt8](repeating: 1, count: 255))
        XCTAssertEqual(middle.flacBody(afterPageBefore: false), [])
        // The packet a page leaves open is kept from its start: begun on the page after a
        // boundary, begun by the page, or continued from one handed on whole; not the middle of
        // one whose start was skipped, nor what follows it.
        XCTAssertTrue(rawPage(flags: 0, sequence: 5, lacing: [3, 255], body: [UInt8](repeating: 2, count: 258)).keepsOpenPacket(afterPageBefore: false))
        XCTAssertTrue(rawPage(flags: 0, sequence: 5, lacing: [255], body: [UInt8](repeating: 2, count: 255)).keepsOpenPacket(afterPageBefore: false))
        XCTAssertFalse(middle.keepsOpenPacket(afterPageBefore: false))
        XCTAssertTrue(middle.keepsOpenPacket(afterPageBefore: true))
        XCTAssertTrue(continued.keepsOpenPacket(afterPageBefore: false), "no packet left open")
        // A truncated header gives nothing, never a trap.
        XCTAssertEqual(OggPage(bytes: Array("OggS".utf8), serial: 0, beginsStream: false).flacBody(afterPageBefore: true), [])
    }

    func testPagesSplitAcrossChunksWithGarbageAndCRC() {
        var s = OggPageSplitter()
        let a = page(serial: 7, bos: true, body: [1, 2, 3]), b = page(serial: 9, bos: true, body: [4])
        var bad = page(serial: 7, bos: false, body: [5, 6])
        bad[bad.count - 1] ^= 0x10
        let all = [0xDE, 0xAD] + a + bad + b
        var pages: [OggPage] = []
        for byte in all { s.feed([byte]); while let p = s.next() { pages.append(p) } }
        XCTAssertEqual(pages.map(\.serial), [7, 7, 9])
        XCTAssertEqual(pages.map(\.beginsStream), [true, false, true])
        XCTAssertEqual(pages.map(\.checksumValid), [true, false, true])
        XCTAssertEqual(s.skippedBytes, 2)
    }

    func testSeededRandomInputNeverCrashes() {
        var rng = SplitMix64(seed: 99)
        var pages = 0
        for _ in 0..<5_000 {
            var s = OggPageSplitter()
            var bytes = (0..<Int(rng.next() % 400)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            if rng.next() % 2 == 0 { bytes = page(serial: 1, bos: true, body: Array(bytes.prefix(200))) + bytes }
            s.feed(bytes)
            while let p = s.next() { pages += 1; _ = p.checksumValid }
            _ = StreamSniffer.classify(bytes, contentType: ["audio/flac", "application/ogg", nil, "text/html"][Int(rng.next() % 4)], url: url)
        }
        XCTAssertGreaterThan(pages, 0)
    }
}
