@testable import Mopidy
import Net
import Support
import XCTest

/// What one message from the server may cost: its text is bounded by `MopidyLimits.replyBytes`
/// or `eventBytes` (a larger event is read past), its parsed tree by `treeBytes` and lists to
/// their first `listElements`, so no shape of JSON turns megabytes of text into a tree ten or
/// twenty times larger.
final class MessageSizeTests: XCTestCase {
    /// `unit` repeated in a JSON array until the text is `bytes` long.
    func array(of unit: String, bytes: Int) -> [UInt8] {
        let n = (bytes - 2) / (unit.utf8.count + 1)
        return Array(("[" + Array(repeating: unit, count: n).joined(separator: ",") + "]").utf8)
    }

    /// A track as Mopidy-Local sends it (captured from the rig), `i` in its names.
    func track(_ i: Int) -> String {
        #"{"__model__": "TlTrack", "tlid": \#(i), "track": {"__model__": "Track", "uri": "local:track:Rig%20Sessions/\#(i)-alpha.flac", "name": "Alpha Tone \#(i)", "artists": [{"__model__": "Artist", "uri": "local:artist:md5:466aae81c331d94856bf56bd2e1bdb1b", "name": "Groove Test Band"}], "album": {"__model__": "Album", "uri": "local:album:md5:a5a74d2ed9d0460f05633ed635f45ef2", "name": "Rig Sessions", "artists": [{"__model__": "Artist", "uri": "local:artist:md5:466aae81c331d94856bf56bd2e1bdb1b", "name": "Groove Test Band"}], "date": "2024-05-01"}, "genre": "Test", "track_no": 1, "disc_no": 1, "date": "2024-05-01", "length": 30000, "last_modified": 1796080709701}}"#
    }

    func testAFiveThousandTrackReplyFitsAndIsCutToTheListLimit() throws {
        let text = #"{"jsonrpc": "2.0", "id": 1, "result": ["# + (1...5000).map(track).joined(separator: ", ") + "]}"
        XCTAssertLessThan(text.utf8.count, MopidyLimits.replyBytes)
        let reply = try JSON.parse(text, maxTreeBytes: MopidyLimits.treeBytes, maxArrayElements: MopidyLimits.listElements)
        let tracks = (reply["result"]?.array ?? []).compactMap(TlTrack.init(json:))
        XCTAssertEqual(tracks.count, MopidyLimits.listElements)
        XCTAssertEqual(tracks.first?.tlid, 1)
        XCTAssertEqual(tracks.first?.track.artists, ["Groove Test Band"])
        // The same reply whole: the tree alone would take about 15 MB, over the budget.
        XCTAssertThrowsError(try JSON.parse(text, maxTreeBytes: MopidyLimits.treeBytes)) {
            XCTAssertTrue("\($0)".contains("would take more than 1 MiB of memory"), "\($0)")
        }
    }

    func testAPlaylistEventOfThousandsOfTracksStillDecodes() throws {
        let text = #"{"event": "playlist_changed", "playlist": {"uri": "m3u:big.m3u", "tracks": ["#
            + (1...5000).map(track).joined(separator: ", ") + "]}}"
        XCTAssertEqual(try MopidyEvent.decode(text), .playlistChanged)
    }

    func testShapesThatBlowUpAreRefusedWithinTheBudget() {
        // Each costs 12–23 times its text when built whole (measured: 8 MiB → 101–190 MB); 2 MiB
        // of each is already far over the budget.
        let limit = 2 << 20
        let nested = "[" + Array(repeating: "0", count: 256).joined(separator: ",") + "]"
        let wide = "{" + (0..<60_000).map { #""k\#($0)":0"# }.joined(separator: ",") + "}"
        for (name, bytes) in [("[[[0]*256]*256]*n", array(of: "[" + Array(repeating: nested, count: 256).joined(separator: ",") + "]",
                                                               bytes: limit)),
                              ("an object of 60 000 members", Array(wide.utf8)),
                              ("[\"…\"*256]*n", array(of: "[" + Array(repeating: #""abcdefghijklmnopqrstuvwxyz0123456789abcd""#, count: 256)
                                                                .joined(separator: ",") + "]", bytes: limit))] {
            let t0 = monotonicMs()
            XCTAssertThrowsError(try JSON.parse(bytes, maxTreeBytes: MopidyLimits.treeBytes,
                                                maxArrayElements: MopidyLimits.listElements), name) {
                XCTAssertTrue("\($0)".contains("memory"), "\(name): \($0)")
            }
            XCTAssertLessThan(monotonicMs() - t0, 5000, name)
        }
        // Flat lists are cut to their start, whatever their length.
        for unit in ["0", "[0]", #"{"a":0}"#, "[]"] {
            let j = try? JSON.parse(array(of: unit, bytes: limit), maxTreeBytes: MopidyLimits.treeBytes,
                                    maxArrayElements: MopidyLimits.listElements)
            XCTAssertEqual(j?.array?.count, MopidyLimits.listElements, unit)
        }
    }

    func testWhatIsNotBuiltIsStillCheckedStrictly() {
        for bad in ["[1,2,[1,]]", "[1,2,\"\u{1}\"]", "[1,2,tru]", "[1,2,{\"a\" 1}]", "[1,2,\"\\x\"]", "[1,2,[" + String(repeating: "[", count: 70)] {
            XCTAssertThrowsError(try JSON.parse(bad, maxArrayElements: 2), bad)
        }
        XCTAssertThrowsError(try JSON.parse([0x5B, 0x31, 0x2C, 0x31, 0x2C, 0x22, 0xC3, 0x28, 0x22, 0x5D], maxArrayElements: 1),
                             "invalid UTF-8 in an element that is not built")
        XCTAssertThrowsError(try JSON.parse(Array(#"[1,1,"a\u00e9"#.utf8) + [0xFF, 0x22, 0x5D], maxArrayElements: 1))
        XCTAssertEqual(try JSON.parse(#"[1,2,"é\n",{"a":[true]}]"#, maxArrayElements: 2), .array([.number(1), .number(2)]))
    }

    func testALongStringIsCountedBeforeItIsMade() {
        let text = Array(("\"" + String(repeating: "x", count: 5 << 20) + "\"").utf8)
        XCTAssertThrowsError(try JSON.parse(text, maxTreeBytes: MopidyLimits.treeBytes))
        XCTAssertEqual(try JSON.parse(text, maxTreeBytes: 6 << 20).string?.utf8.count, 5 << 20)
    }

    /// A frame header for `count` bytes of `op` (64-bit length).
    func header(_ op: UInt8, _ count: Int, fin: Bool = true) -> [UInt8] {
        var h: [UInt8] = [(fin ? 0x80 : 0) | op, 127]
        for i in (0..<8).reversed() { h.append(UInt8(truncatingIfNeeded: count >> (i * 8))) }
        return h
    }

    func testAnEventOverTheLimitIsReadPastAndTheSocketKept() throws {
        var r = WebSocketFrameReader(messageLimit: 1 << 20, skipLimit: 32 << 20)
        let big = 20 << 20
        r.feed(header(0x1, big))
        var fed = 0
        while fed < big {
            // As a socket delivers it: nothing of it is held.
            let n = min(16384, big - fed)
            r.feed([UInt8](repeating: 0x78, count: n))
            fed += n
            let m = try r.next()
            XCTAssertEqual(m, fed == big ? .skipped(bytes: big) : nil)
            XCTAssertLessThanOrEqual(r.capacity, 1 << 16)
        }
        // Fragmented, with a ping between: skipped as one message, the ping answered.
        let part = [UInt8](repeating: 0x78, count: 700_000)
        r.feed(header(0x1, part.count, fin: false) + part + [0x89, 1, 7] + header(0x0, part.count) + part
               + [0x81, 2, 0x7B, 0x7D])
        XCTAssertEqual(try r.next(), .ping([7]))
        XCTAssertEqual(try r.next(), .skipped(bytes: 1_400_000))
        XCTAssertEqual(try r.next(), .text("{}"))
        // Over the skip limit, or a frame claiming 2^62 bytes: the connection is broken.
        for claim in [33 << 20, 1 << 62] {
            var c = WebSocketFrameReader(messageLimit: 1 << 20, skipLimit: 32 << 20)
            c.feed(header(0x1, claim))
            XCTAssertThrowsError(try c.next()) { XCTAssertEqual($0 as? WebSocketProtocolError, .messageTooLarge(limit: 1 << 20)) }
        }
    }

    func testTheFrameReaderLetsGoOfALargeMessagesBuffer() throws {
        var r = WebSocketFrameReader(messageLimit: 4 << 20)
        let payload = [UInt8](repeating: 0x61, count: 3 << 20)
        var frame: [UInt8] = [0x81, 127]
        for i in (0..<8).reversed() { frame.append(UInt8(truncatingIfNeeded: payload.count >> (i * 8))) }
        r.feed(frame + payload)
        guard case .text(let t)? = try r.next() else { return XCTFail() }
        XCTAssertEqual(t.utf8.count, payload.count)
        XCTAssertLessThan(r.capacity, 1 << 16, "the 3 MiB buffer is still held")
    }

    func testByteCounts() {
        XCTAssertEqual(byteCount(8 << 20), "8 MiB")
        XCTAssertEqual(byteCount(3_157_932), "3.0 MiB")
        XCTAssertEqual(byteCount(1536), "1.5 KiB")
        XCTAssertEqual(byteCount(12), "12 bytes")
    }
}
