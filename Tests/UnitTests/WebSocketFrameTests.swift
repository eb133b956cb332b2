import Net
import XCTest

final class WebSocketFrameTests: XCTestCase {
    func frame(_ op: UInt8, _ payload: [UInt8], fin: Bool = true) -> [UInt8] {
        var out: [UInt8] = [(fin ? 0x80 : 0) | op]
        if payload.count < 126 { out.append(UInt8(payload.count)) }
        else if payload.count <= 0xFFFF { out += [126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)] }
        else { out.append(127); for i in (0..<8).reversed() { out.append(UInt8(truncatingIfNeeded: payload.count >> (i * 8))) } }
        return out + payload
    }

    func testHandshakeAcceptMatchesRFCExample() {
        // RFC 6455 §1.3's worked example.
        XCTAssertEqual(webSocketAccept(forKey: "dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        XCTAssertEqual(base64Encode(Array("ab".utf8)), "YWI=")
        XCTAssertEqual(base64Encode(Array("abc".utf8)), "YWJj")
        XCTAssertEqual(base64Encode(Array("a".utf8)), "YQ==")
    }

    func testCapturedMopidyEventParsesWholeAndByteByByte() throws {
        // Captured from the rig's Mopidy 3.4 through nginx.
        let text = #"{"event": "volume_changed", "volume": 100}"#
        let bytes = frame(0x1, Array(text.utf8))
        var whole = WebSocketFrameReader()
        whole.feed(bytes)
        XCTAssertEqual(try whole.next(), .text(text))
        XCTAssertNil(try whole.next())
        var split = WebSocketFrameReader()
        var got: [WebSocketMessage] = []
        for b in bytes {
            split.feed([b])
            if let m = try split.next() { got.append(m) }
        }
        XCTAssertEqual(got, [.text(text)])
    }

    func testFragmentedMessageWithInterleavedPing() throws {
        var r = WebSocketFrameReader()
        r.feed(frame(0x1, Array("hel".utf8), fin: false))
        r.feed(frame(0x9, [1, 2]))
        r.feed(frame(0x0, Array("lo ".utf8), fin: false))
        r.feed(frame(0x0, Array("wörld".utf8), fin: true))
        XCTAssertEqual(try r.next(), .ping([1, 2]))
        XCTAssertEqual(try r.next(), .text("hello wörld"))
    }

    func testLengthsOf16And64Bits() throws {
        var r = WebSocketFrameReader(messageLimit: 1 << 20)
        let mid = [UInt8](repeating: 7, count: 300), big = [UInt8](repeating: 9, count: 70_000)
        r.feed(frame(0x2, mid) + frame(0x2, big))
        XCTAssertEqual(try r.next(), .binary(mid))
        XCTAssertEqual(try r.next(), .binary(big))
    }

    func testOversizeMessageIsRejectedBeforeItIsBuffered() {
        var r = WebSocketFrameReader(messageLimit: 1000)
        // Only the header of a 2 GiB frame: rejected from the header alone.
        r.feed([0x82, 127, 0, 0, 0, 0, 0x80, 0, 0, 0])
        XCTAssertThrowsError(try r.next()) { XCTAssertEqual($0 as? WebSocketProtocolError, .messageTooLarge(limit: 1000)) }
        var f = WebSocketFrameReader(messageLimit: 1000)
        f.feed(frame(0x1, [UInt8](repeating: 65, count: 600), fin: false) + frame(0x0, [UInt8](repeating: 65, count: 600)))
        XCTAssertThrowsError(try f.next())
    }

    func testProtocolViolations() {
        let cases: [([UInt8], WebSocketProtocolError)] = [
            ([0xC1, 0], .reservedBitsSet),
            ([0x83, 0], .unknownOpcode(3)),
            ([0x81, 0x80, 0, 0, 0, 0], .maskedServerFrame),
            ([0x09, 0], .fragmentedControlFrame),
            ([0x80, 0], .unexpectedContinuation),
            ([0x81, 2, 0xC3, 0x28], .invalidUTF8),
            ([0x81, 126, 0, 5, 1, 2, 3, 4, 5], .invalidLength),
        ]
        for (bytes, expected) in cases {
            var r = WebSocketFrameReader()
            r.feed(bytes)
            XCTAssertThrowsError(try r.next(), "\(bytes)") { XCTAssertEqual($0 as? WebSocketProtocolError, expected) }
        }
        var r = WebSocketFrameReader()
        r.feed(frame(0x1, [65], fin: false) + frame(0x1, [66]))
        XCTAssertThrowsError(try r.next()) { XCTAssertEqual($0 as? WebSocketProtocolError, .expectedContinuation) }
    }

    func testCloseFrame() throws {
        var r = WebSocketFrameReader()
        r.feed(frame(0x8, [0x03, 0xE9] + Array("going away".utf8)) + frame(0x8, []))
        XCTAssertEqual(try r.next(), .close(code: 1001, reason: "going away"))
        XCTAssertEqual(try r.next(), .close(code: 1005, reason: ""))
    }

    func testClientFramesAreMasked() {
        let f = webSocketClientFrame(opcode: 1, payload: Array("Hi".utf8), mask: [1, 2, 3, 4])
        XCTAssertEqual(f, [0x81, 0x82, 1, 2, 3, 4, UInt8(ascii: "H") ^ 1, UInt8(ascii: "i") ^ 2])
        let long = webSocketClientFrame(opcode: 2, payload: [UInt8](repeating: 0, count: 70_000), mask: [0, 0, 0, 0])
        XCTAssertEqual(Array(long.prefix(2)), [0x82, 0xFF])
        XCTAssertEqual(long.count, 2 + 8 + 4 + 70_000)
    }

    func testSeededRandomInputNeverCrashes() {
        // A seeded random-input run over the frame reader; libFuzzer runs the same target longer
        // (Fuzz/). Each input must end in a message, an error or a request for more bytes.
        var rng = SplitMix64(seed: 0x6772_6f6f_7665)
        var outcomes = [0, 0, 0]
        for _ in 0..<20_000 {
            let n = Int(rng.next() % 64)
            var bytes = (0..<n).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            if rng.next() % 2 == 0, !bytes.isEmpty { bytes[0] = 0x81 }
            if bytes.count > 1, rng.next() % 2 == 0 { bytes[1] &= 0x7F }
            var r = WebSocketFrameReader(messageLimit: 4096)
            r.feed(bytes)
            do {
                if try r.next() != nil { outcomes[0] += 1 } else { outcomes[1] += 1 }
            } catch { outcomes[2] += 1 }
        }
        XCTAssertTrue(outcomes.allSatisfy { $0 > 0 }, "inputs did not reach every outcome: \(outcomes)")
    }
}

/// A small deterministic generator, so a failing input can be reproduced from the seed.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
