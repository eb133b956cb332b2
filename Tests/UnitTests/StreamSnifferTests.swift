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

    func testPagesSplitAcrossChunksWithGarbageAndCRC() {
        var s = OggPage.Splitter()
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
            var s = OggPage.Splitter()
            var bytes = (0..<Int(rng.next() % 400)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            if rng.next() % 2 == 0 { bytes = page(serial: 1, bos: true, body: Array(bytes.prefix(200))) + bytes }
            s.feed(bytes)
            while let p = s.next() { pages += 1; _ = p.checksumValid }
            _ = StreamSniffer.classify(bytes, contentType: ["audio/flac", "application/ogg", nil, "text/html"][Int(rng.next() % 4)], url: url)
        }
        XCTAssertGreaterThan(pages, 0)
    }
}
