import Foundation
import Mopidy
import XCTest

/// The Mopidy client's call sequences (`MopidyClient+Sequences.swift`) against the rig's real
/// Mopidy: what each leaves in the tracklist and what plays.
final class MopidySequenceTests: XCTestCase {
    var rig: Rig!
    var client: MopidyClient!

    override func setUpWithError() throws {
        rig = try Rig.get()
        client = MopidyClient(endpoints: .init(rpcURL: rig.info.groove_rpc_url, wsURL: rig.info.groove_ws_url))
    }

    override func tearDown() {
        // The rig's own tracklist (the library, playing) for the tests after this one.
        if let rig {
            _ = try? rig.command(["cmd": "queue"])
            try? FileManager.default.removeItem(atPath: "\(rig.info.playlists_dir)/Sequence.m3u8")
            _ = try? rig.rpc("core.playlists.refresh")
        }
        super.tearDown()
    }

    /// The library's local: URIs, in the tracklist's order.
    func libraryURIs() throws -> [String] {
        try client.tracklistAroundCurrent(count: 100).map(\.track.uri).filter { $0.hasPrefix("local:") }
    }

    func tlids() throws -> [Int] {
        (try rig.rpc("core.tracklist.get_tl_tracks") as? [[String: Any]] ?? []).compactMap { $0["tlid"] as? Int }
    }

    func currentTlid() throws -> Int? {
        (try rig.rpc("core.playback.get_current_tl_track") as? [String: Any])?["tlid"] as? Int
    }

    func testActivatePlaylistReplacesTheTracklistAndPlaysTheFirst() throws {
        let lib = try libraryURIs()
        XCTAssertGreaterThanOrEqual(lib.count, 3)
        try FileManager.default.createDirectory(atPath: rig.info.playlists_dir, withIntermediateDirectories: true)
        try "#EXTM3U\n\(lib[2])\n\(lib[0])\n".write(toFile: "\(rig.info.playlists_dir)/Sequence.m3u8", atomically: true,
                                                   encoding: .utf8)
        try rig.rpc("core.playlists.refresh")
        let uri = try XCTUnwrap(try client.playlists().first { $0.name == "Sequence" }?.uri, "the playlist is not listed")

        let added = try client.activatePlaylist(uri: uri)
        XCTAssertEqual(added.count, 2)
        XCTAssertEqual(try tlids(), added, "the tracklist is the playlist's items, nothing else")
        XCTAssertEqual(try client.tracklistAroundCurrent(count: 10).map(\.track.uri), [lib[2], lib[0]])
        XCTAssertTrue(waitUntil(5) { (try? currentTlid()) == added.first }, "the first item plays")
        XCTAssertEqual(try client.state(), .playing)
    }

    func testAddTrackGoesRightAfterTheGivenTrackOrFirst() throws {
        let lib = try libraryURIs()
        let current = try XCTUnwrap(try client.currentTlTrack())
        let position = try XCTUnwrap(try client.index(tlid: current.tlid))

        let after = try client.addTrack(uri: lib[0], afterTlid: current.tlid, play: false)
        XCTAssertEqual(try client.index(tlid: after.tlid), position + 1)
        XCTAssertEqual(try currentTlid(), current.tlid, "not played when not asked")

        let first = try client.addTrack(uri: lib[1], afterTlid: nil, play: false)
        XCTAssertEqual(try client.index(tlid: first.tlid), 0, "no track given: at the start")
        try client.remove(tlid: first.tlid)
        let gone = try client.addTrack(uri: lib[1], afterTlid: first.tlid, play: false)
        XCTAssertEqual(try client.index(tlid: gone.tlid), 0, "a track no longer there: at the start")

        let played = try client.addTrack(uri: lib[2], afterTlid: current.tlid, play: true)
        // Mopidy's play answers before its current track is switched: wait for it.
        XCTAssertTrue(waitUntil(5) { (try? currentTlid()) == played.tlid }, "the added track plays")
        XCTAssertEqual(played.track.uri, lib[2])
    }

    func testOpenAddsAtTheEndAndPlaysAndSaysWhenNothingWasAdded() throws {
        let lib = try libraryURIs()
        let opened = try client.open(uri: lib[1])
        XCTAssertEqual(try tlids().last, opened.tlid, "at the end")
        XCTAssertTrue(waitUntil(5) { (try? currentTlid()) == opened.tlid }, "the opened track plays")

        let before = try tlids()
        do {
            try client.open(uri: "local:track:no-such-track.flac")
            XCTFail("an unknown URI opened")
        } catch {
            XCTAssertTrue(error.description.contains("Mopidy added nothing for local:track:no-such-track.flac"),
                          error.description)
        }
        XCTAssertEqual(try tlids(), before, "nothing added, nothing removed")
        XCTAssertEqual(try currentTlid(), opened.tlid, "what played plays on")
    }
}
