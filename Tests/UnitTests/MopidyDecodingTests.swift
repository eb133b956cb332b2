@testable import Mopidy
import XCTest

final class MopidyDecodingTests: XCTestCase {
    // Captured from the rig's Mopidy 3.4 (file backend, two artists in the order Mopidy sent them).
    static let started = #"{"event": "track_playback_started", "tl_track": {"__model__": "TlTrack", "tlid": 2, "track": {"__model__": "Track", "uri": "file:///tmp/rig/music/Rig%20Sessions/02-duet.flac", "name": "Duet in A", "artists": [{"__model__": "Artist", "name": "Alan Turing"}, {"__model__": "Artist", "name": "Ada Lovelace"}], "album": {"__model__": "Album", "name": "Rig Sessions", "artists": [{"__model__": "Artist", "name": "Groove Test Band"}], "date": "2024-05-01"}, "genre": "Test", "track_no": 2, "disc_no": 1, "date": "2024-05-01", "length": 30000, "bitrate": 0}}}"#

    func testTrackPlaybackStarted() throws {
        guard case .trackPlaybackStarted(let tl)? = try MopidyEvent.decode(Self.started) else { return XCTFail() }
        XCTAssertEqual(tl.tlid, 2)
        XCTAssertEqual(tl.track.name, "Duet in A")
        XCTAssertEqual(tl.track.artists, ["Alan Turing", "Ada Lovelace"])
        XCTAssertEqual(tl.track.albumArtists, ["Groove Test Band"])
        XCTAssertEqual(tl.track.lengthMs, 30000)
        XCTAssertEqual(tl.track.trackNumber, 2)
    }

    func testEveryCoreEvent() throws {
        let cases: [(String, MopidyEvent)] = [
            (#"{"event":"playback_state_changed","old_state":"playing","new_state":"paused"}"#, .playbackStateChanged(old: .playing, new: .paused)),
            (#"{"event":"volume_changed","volume":42}"#, .volumeChanged(42)),
            (#"{"event":"mute_changed","mute":true}"#, .muteChanged(true)),
            (#"{"event":"seeked","time_position":12345}"#, .seeked(positionMs: 12345)),
            (#"{"event":"stream_title_changed","title":"Live – 東京"}"#, .streamTitleChanged("Live – 東京")),
            (#"{"event":"tracklist_changed"}"#, .tracklistChanged),
            (#"{"event":"options_changed"}"#, .optionsChanged),
            (#"{"event":"playlists_loaded"}"#, .playlistsLoaded),
            (#"{"event":"playlist_changed","playlist":{}}"#, .playlistChanged),
            (#"{"event":"playlist_deleted","uri":"m3u:a.m3u8"}"#, .playlistDeleted),
            (#"{"event":"track_playback_paused","tl_track":null,"time_position":5}"#, .trackPlaybackPaused(nil, positionMs: 5)),
            (#"{"event":"some_future_event"}"#, .other("some_future_event")),
        ]
        for (text, expected) in cases { XCTAssertEqual(try MopidyEvent.decode(text), expected, text) }
        XCTAssertNil(try MopidyEvent.decode(#"{"jsonrpc":"2.0","id":1,"result":null}"#))
    }

    func testMistypedAndMissingFieldsAreLenient() throws {
        // A number as a string (not a number), a null length, no artists: still a track.
        let t = Track(json: try JSON.parse(#"{"uri":"x:1","name":"N","track_no":"7","length":null,"artists":[{"name":5},{"name":"A"}]}"#))
        XCTAssertNil(t?.trackNumber)
        XCTAssertNil(t?.lengthMs)
        XCTAssertEqual(t?.artists, ["A"])
        XCTAssertNil(Track(json: try JSON.parse(#"{"name":"no uri"}"#)))
        XCTAssertThrowsError(try MopidyEvent.decode(#"{"event":"volume_changed","volume":"loud"}"#))
        XCTAssertThrowsError(try MopidyEvent.decode(#"{"event":"track_playback_started"}"#))
        XCTAssertThrowsError(try MopidyEvent.decode("<html>502 Bad Gateway</html>"))
        XCTAssertThrowsError(try MopidyEvent.decode(#"[1,2]"#))
    }

    func testJSONParserStrictness() throws {
        XCTAssertEqual(try JSON.parse(#" {"a":[1,2.5,-3e2,true,false,null,"\u00e9\ud83c\udfb5\n"]} "#),
                       .object(["a": .array([.number(1), .number(2.5), .number(-300), .bool(true), .bool(false), .null, .string("é🎵\n")])]))
        for bad in ["", "{", "[1,]", "{\"a\" 1}", "01", "1.", "\"\u{01}\"", "tru", "[1] x", "\"\\x\""] {
            XCTAssertThrowsError(try JSON.parse(bad), bad)
        }
        XCTAssertThrowsError(try JSON.parse([0x22, 0xC3, 0x28, 0x22]), "invalid UTF-8")
        XCTAssertThrowsError(try JSON.parse(String(repeating: "[", count: 100) + String(repeating: "]", count: 100)))
        XCTAssertEqual(try JSON.parse("\"\\ud800\""), .string("\u{FFFD}"))
        let round = JSON.object(["k": .string("q\"\\\n\u{1}"), "n": .number(3), "f": .number(0.5)])
        XCTAssertEqual(try JSON.parse(round.serialized()), round)
    }

    func testRPCErrorSnippetAndEndpoints() {
        XCTAssertEqual(MopidyEndpoints.groove(host: "::1").rpcURL, "http://[::1]:8180/api/mopidy/rpc")
        XCTAssertEqual(MopidyEndpoints.plain(host: "127.0.0.1").wsURL, "ws://127.0.0.1:6680/mopidy/ws")
        XCTAssertEqual(MopidyEndpoints.groove(host: "127.0.0.1").httpBase, "http://127.0.0.1:8180")
        // A host alone: Groove Audio's layout first, then plain Mopidy's, on their default ports.
        XCTAssertEqual(MopidyEndpoints.layouts(host: "::1").map(\.rpcURL),
                       ["http://[::1]:8180/api/mopidy/rpc", "http://[::1]:6680/mopidy/rpc"])
        XCTAssertEqual(MopidyEndpoints.layouts(host: "127.0.0.1").map(\.wsURL),
                       ["ws://127.0.0.1:8180/ws/mopidy", "ws://127.0.0.1:6680/mopidy/ws"])
        XCTAssertEqual(MopidyClient.snippet(Array("<html>\n<b>502</b>".utf8)), "<html> <b>502</b>")
    }

    func testSeededRandomEventsNeverCrash() {
        var rng = SplitMix64(seed: 42)
        let alphabet = Array(#"{}[]":,0123456789.-eEtrufalsn \"event\" track_playback_started tl_track"#.utf8)
        var decoded = 0
        for _ in 0..<20_000 {
            let n = Int(rng.next() % 48)
            let bytes = (0..<n).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }
            if let j = try? JSON.parse(bytes) { decoded += 1; _ = try? MopidyEvent.decode(j) }
        }
        XCTAssertGreaterThan(decoded, 0)
    }
}

/// Mopidy 4's shapes (its models are pydantic's, `mopidy/_exts/http` at v4.0.1): a JSON-RPC
/// reply carries every unset field as `null` and names a model `"__model__"`; an event is
/// dumped without aliases, so a model is named `"model"`, unset fields are `null` there too, and
/// `"event"` comes last. The bridge reads both as it reads Mopidy 3.4's, and says nothing of
/// the nulls.
final class MopidyFourShapeTests: XCTestCase {
    /// One artist, album and track as Mopidy 4 writes them; `key` names the model's tag.
    static func artist(_ name: String, _ key: String) -> String {
        #"{"\#(key)":"Artist","uri":null,"name":"\#(name)","sortname":null,"musicbrainz_id":null}"#
    }

    static func track(_ n: Int, _ key: String) -> String {
        #"{"\#(key)":"Track","uri":"local:track:Rig%20Sessions/0\#(n)-duet.flac","name":"Duet \#(n)","#
            + #""artists":[\#(artist("Alan Turing", key)),\#(artist("Ada Lovelace", key))],"#
            + #""album":{"\#(key)":"Album","uri":null,"name":"Rig Sessions","artists":[\#(artist("Groove Test Band", key))],"#
            + #""num_tracks":null,"num_discs":null,"date":"2024-05-01","musicbrainz_id":null},"#
            + #""composers":[],"performers":[],"genre":"Test","track_no":\#(n),"disc_no":null,"date":"2024-05-01","#
            + #""length":30000,"bitrate":null,"comment":null,"musicbrainz_id":null,"last_modified":null}"#
    }

    static func tlTrack(_ n: Int, _ key: String) -> String { #"{"\#(key)":"TlTrack","tlid":\#(n),"track":\#(track(n, key))}"# }

    func testEventsNameTheirModelsModelAndCarryNulls() throws {
        var events: [MopidyEvent?] = []
        let lines = try loggedLines {
            events.append(try MopidyEvent.decode(#"{"tl_track":\#(Self.tlTrack(2, "model")),"event":"track_playback_started"}"#))
            events.append(try MopidyEvent.decode(#"{"tl_track":\#(Self.tlTrack(2, "model")),"time_position":1234,"event":"track_playback_paused"}"#))
            events.append(try MopidyEvent.decode(#"{"old_state":"playing","new_state":"stopped","event":"playback_state_changed"}"#))
            events.append(try MopidyEvent.decode(#"{"tl_track":null,"time_position":0,"event":"track_playback_ended"}"#))
        }
        guard case .trackPlaybackStarted(let tl)?? = events.first else { return XCTFail("\(events)") }
        XCTAssertEqual(tl.tlid, 2)
        XCTAssertEqual(tl.track.name, "Duet 2")
        XCTAssertEqual(tl.track.artists, ["Alan Turing", "Ada Lovelace"])
        XCTAssertEqual(tl.track.album, "Rig Sessions")
        XCTAssertEqual(tl.track.albumArtists, ["Groove Test Band"])
        XCTAssertEqual(tl.track.lengthMs, 30000)
        XCTAssertNil(tl.track.discNumber)
        XCTAssertEqual(events[1], .trackPlaybackPaused(tl, positionMs: 1234))
        XCTAssertEqual(events[2], .playbackStateChanged(old: .playing, new: .stopped))
        XCTAssertEqual(events[3], .trackPlaybackEnded(nil, positionMs: 0))
        XCTAssertEqual(lines, [], "Mopidy 4's nulls logged")
    }

    func testRepliesWithNullsDecodeAsMopidyThreesDo() throws {
        let three = try XCTUnwrap(TlTrack(json: try JSON.parse(MopidyDecodingTests.started)["tl_track"] ?? .null))
        var four: TlTrack?
        var list: [TlTrack] = []
        var images: [Image] = []
        let lines = try loggedLines {
            four = TlTrack(json: try JSON.parse(Self.tlTrack(2, "__model__")))
            list = (try JSON.parse("[\(Self.tlTrack(1, "__model__")),\(Self.tlTrack(2, "__model__"))]").array ?? [])
                .compactMap(TlTrack.init(json:))
            let reply = #"{"local:track:a.flac":[{"__model__":"Image","uri":"/local/a.jpg","width":null,"height":null},"#
                + #"{"__model__":"Image","uri":"/local/b.jpg","width":300,"height":300}]}"#
            images = Image.list(try JSON.parse(reply), for: "local:track:a.flac")
        }
        XCTAssertEqual(four?.track.artists, three.track.artists)
        XCTAssertEqual(four?.track.albumArtists, three.track.albumArtists)
        XCTAssertEqual(four?.track.lengthMs, three.track.lengthMs)
        XCTAssertEqual(four?.track.date, three.track.date)
        XCTAssertEqual(list.map(\.tlid), [1, 2])
        XCTAssertEqual(images.map(\.uri), ["/local/b.jpg", "/local/a.jpg"], "largest first, an unknown size last")
        XCTAssertEqual(lines, [], "Mopidy 4's nulls logged")
    }

    /// Mopidy 4 writes every field: a 5 000-track tracklist in its shape still fits one reply
    /// (`MopidyLimits.replyBytes`), and its parsed tree stays within `treeBytes` with lists cut
    /// to `listElements`.
    func testAFiveThousandTrackReplyInMopidyFoursShapeFitsTheLimits() throws {
        let reply = #"{"jsonrpc":"2.0","id":1,"result":["# + (1...5000).map { Self.tlTrack($0, "__model__") }.joined(separator: ",") + "]}"
        XCTAssertLessThan(reply.utf8.count, MopidyLimits.replyBytes, "\(reply.utf8.count) bytes")
        let parsed = try JSON.parse(reply, maxTreeBytes: MopidyLimits.treeBytes, maxArrayElements: MopidyLimits.listElements)
        XCTAssertEqual(parsed["result"]?.array?.count, MopidyLimits.listElements)
        print("a 5 000-track tracklist in Mopidy 4's shape: \(reply.utf8.count) bytes, \(reply.utf8.count / 5000) a track")
    }
}
