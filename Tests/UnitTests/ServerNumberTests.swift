@testable import Mopidy
import Support
import Synchronization
import XCTest

/// Log lines written while `body` runs.
func loggedLines(_ body: () throws -> Void) rethrows -> [String] {
    let lines = Mutex<[String]>([])
    Log.setSink { line in lines.withLock { $0.append(line) } }
    defer { Log.setSink(nil) }
    try body()
    return lines.withLock { $0 }
}

/// Numbers from the server: only JSON numbers that are whole and exact become integers, and the
/// models take them only inside `ServerRange`, with one log line per value clamped or dropped.
final class ServerNumberTests: XCTestCase {
    func testIntegersComeOnlyFromWholeExactNumbers() throws {
        XCTAssertNil(JSON.string("9223372036854775807").int, "a string is not a number")
        XCTAssertNil(JSON.string("42").int)
        XCTAssertNil(try JSON.parse("9223372036854775807").int, "beyond 2^53 a double is not exact")
        XCTAssertNil(try JSON.parse("-9223372036854775808").int)
        XCTAssertNil(try JSON.parse("1e300").int)
        XCTAssertNil(try JSON.parse("1.5").int)
        XCTAssertEqual(try JSON.parse("9007199254740991").int, 9_007_199_254_740_991)
        XCTAssertNil(try JSON.parse("9007199254740992").int)
        XCTAssertEqual(try JSON.parse("-0").int, 0)
        XCTAssertEqual(try JSON.parse("3.0e2").int, 300)
        XCTAssertNil(JSON.string("1.5").double, "a string is not a number")
        XCTAssertEqual(JSON.number(1.5).double, 1.5)
    }

    func track(_ fields: String) throws -> Track? {
        Track(json: try JSON.parse(#"{"uri":"x:1","name":"N""# + fields + "}"))
    }

    func testTrackFieldsOutsideTheirRangesAreDroppedWithOneLineEach() throws {
        var t: Track?
        let lines = try loggedLines {
            t = try track(#","length":"9223372036854775807","track_no":1e20,"disc_no":0"#)
        }
        XCTAssertNil(t?.lengthMs)
        XCTAssertNil(t?.trackNumber)
        XCTAssertNil(t?.discNumber)
        XCTAssertEqual(lines.count, 3, "\(lines)")
        XCTAssertTrue(lines.contains { $0.contains("track length (ms) of x:1") && $0.contains("not an exact whole number") }, "\(lines)")
        XCTAssertTrue(lines.contains { $0.contains("disc number of x:1 of 0, outside 1…10000; ignored") }, "\(lines)")

        XCTAssertNil(try track(#","length":86400001"#)?.lengthMs)
        XCTAssertNil(try track(#","length":-1"#)?.lengthMs)
        XCTAssertNil(try track(#","length":9007199254740991"#)?.lengthMs)
        XCTAssertEqual(try track(#","length":86400000,"track_no":10000,"disc_no":1"#)?.lengthMs, 86_400_000)
        XCTAssertEqual(try track(#","track_no":10000"#)?.trackNumber, 10_000)
        XCTAssertNil(try track(#","track_no":10001"#)?.trackNumber)
        XCTAssertNil(try track(#","track_no":"7""#)?.trackNumber)
        // 0, null and absent all mean "unknown" and are not worth a line.
        XCTAssertEqual(try loggedLines { XCTAssertNil(try track(#","length":0"#)?.lengthMs) }, [])
        XCTAssertEqual(try loggedLines { XCTAssertNil(try track(#","length":null,"track_no":null"#)?.lengthMs) }, [])
    }

    func testTlidsOutsideTheirRangeMakeNoTlTrack() throws {
        func tl(_ tlid: String) throws -> TlTrack? {
            TlTrack(json: try JSON.parse(#"{"tlid":"# + tlid + #","track":{"uri":"x:1"}}"#))
        }
        XCTAssertEqual(try tl("0")?.tlid, 0)
        XCTAssertEqual(try tl("9007199254740991")?.tlid, 9_007_199_254_740_991)
        XCTAssertNil(try tl("-1"))
        XCTAssertNil(try tl(#""5""#))
        XCTAssertNil(try tl("9223372036854775807"))
        XCTAssertNil(try tl("1e30"))
        XCTAssertThrowsError(try MopidyEvent.decode(
            #"{"event":"track_playback_started","tl_track":{"tlid":"9223372036854775807","track":{"uri":"x:1"}}}"#))
    }

    func testEventPositionsAndVolumesAreClampedOrRefused() throws {
        var e: MopidyEvent?
        let lines = try loggedLines { e = try MopidyEvent.decode(#"{"event":"seeked","time_position":9007199254740991}"#) }
        XCTAssertEqual(e, .seeked(positionMs: ServerRange.dayMs))
        XCTAssertEqual(lines.count, 1)
        XCTAssertTrue(lines[0].contains("seeked's time_position of 9007199254740991, outside 0…86400000; using 86400000"), lines[0])
        XCTAssertEqual(try MopidyEvent.decode(#"{"event":"seeked","time_position":-5}"#), .seeked(positionMs: 0))
        for bad in [#""9223372036854775807""#, "9223372036854775807", "1e300", "1.5", "[1]", "null"] {
            XCTAssertThrowsError(try MopidyEvent.decode(#"{"event":"seeked","time_position":"# + bad + "}"), bad)
            XCTAssertThrowsError(try MopidyEvent.decode(#"{"event":"volume_changed","volume":"# + bad + "}"), bad)
        }
        XCTAssertEqual(try MopidyEvent.decode(#"{"event":"volume_changed","volume":250}"#), .volumeChanged(100))
        XCTAssertEqual(try MopidyEvent.decode(#"{"event":"volume_changed","volume":-3}"#), .volumeChanged(0))
        XCTAssertEqual(try MopidyEvent.decode(#"{"event":"track_playback_paused","tl_track":null,"time_position":"12"}"#),
                       .trackPlaybackPaused(nil, positionMs: 0))
        XCTAssertEqual(try MopidyEvent.decode(#"{"event":"track_playback_resumed","time_position":1e17}"#),
                       .trackPlaybackResumed(nil, positionMs: 0))
        XCTAssertEqual(try MopidyEvent.decode(#"{"event":"track_playback_ended","time_position":90000000}"#),
                       .trackPlaybackEnded(nil, positionMs: ServerRange.dayMs))
    }

    func testImageSidesOutsideTheirRangeCountAsUnknown() throws {
        let result = try JSON.parse(#"{"x:1":[{"uri":"/small.jpg","width":10,"height":10},"# +
            #"{"uri":"/huge.jpg","width":4611686018427387904,"height":4611686018427387904},"# +
            #"{"uri":"/strings.jpg","width":"99999","height":"99999"},{"uri":"/big.jpg","width":100000,"height":100000}]}"#)
        var images: [Image] = []
        let lines = loggedLines { images = Image.list(result, for: "x:1") }
        XCTAssertEqual(images.map(\.uri), ["/big.jpg", "/small.jpg", "/huge.jpg", "/strings.jpg"])
        XCTAssertNil(images[2].width)
        XCTAssertEqual(lines.count, 4, "\(lines)")
    }

    func testImageAreaSaturates() {
        XCTAssertEqual(Image(uri: "a", width: .max, height: .max).area, .max)
        XCTAssertEqual(Image(uri: "a", width: 100_000, height: 100_000).area, 10_000_000_000)
        XCTAssertEqual(Image(uri: "a").area, 0)
    }
}
