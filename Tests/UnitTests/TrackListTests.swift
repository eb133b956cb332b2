@testable import Bridge
import DBus
import Foundation
import FoundationXML
import MPRIS
import Mopidy
import XCTest

/// TrackList and Playlists: the call handler, the signals made from a change, the reducer, and
/// the introspection against the spec's members.
final class TrackListTests: XCTestCase {
    static func tl(_ id: Int) -> TlTrack {
        TlTrack(tlid: id, track: Track(uri: "local:track:\(id)", name: "T\(id)", artists: ["A"], lengthMs: 30_000))
    }

    static func meta(_ ids: [Int], title: (Int) -> String = { "T\($0)" }) -> [TrackMetadata] {
        ids.map { TrackMetadata(trackID: TrackMetadata.trackID(tlid: $0), title: title($0)) }
    }

    func members(_ signals: [(member: String, args: [DBusValue])]) -> [String] {
        signals.map { s in
            s.member + " " + s.args.compactMap { a -> String? in
                if case .objectPath(let p) = a { return TrackMetadata.tlid(of: p).map(String.init) ?? "start" }
                if case .array(_, let l) = a { return "[" + l.compactMap { $0.objectPathValue.flatMap(TrackMetadata.tlid(of:)).map(String.init) }.joined(separator: ",") + "]" }
                return nil
            }.joined(separator: " ")
        }
    }

    func signals(_ old: [TrackMetadata], _ new: [TrackMetadata], current: ObjectPath? = nil) -> [String] {
        members(ListSignals.trackList(from: old, to: new, current: current ?? new.first?.trackID ?? TrackMetadata.noTrackID))
    }

    func testSignalsForEachKindOfChange() {
        XCTAssertEqual(signals(Self.meta([1, 2, 3]), Self.meta([1, 2, 3])), [])
        XCTAssertEqual(signals([], Self.meta([1, 2])), ["TrackListReplaced [1,2] 1"])
        XCTAssertEqual(signals(Self.meta([1, 2]), Self.meta([5, 6])), ["TrackListReplaced [5,6] 5"])
        XCTAssertEqual(signals(Self.meta([1, 2]), Self.meta([5, 6]), current: TrackMetadata.noTrackID), ["TrackListReplaced [5,6] start"],
                       "nothing current: the NoTrack id")
        XCTAssertEqual(signals(Self.meta([1, 2, 3]), Self.meta([2, 3, 4])),
                       ["TrackRemoved 1", "TrackAdded 3"], "the next track: the old current leaves, one enters at the end")
        XCTAssertEqual(signals(Self.meta([1, 2]), Self.meta([7, 1, 2])), ["TrackAdded start"])
        XCTAssertEqual(signals(Self.meta([1, 2]), Self.meta([2, 1])), ["TrackListReplaced [2,1] 2"],
                       "a new order is a new list")
        XCTAssertEqual(signals(Self.meta([1, 2]), Self.meta([1, 2]) { "New \($0)" }),
                       ["TrackMetadataChanged 1", "TrackMetadataChanged 2"])
        let renamed = ListSignals.playlists(from: [PlaylistInfo(uri: "m3u:a.m3u8", name: "A"), PlaylistInfo(uri: "m3u:b.m3u8", name: "B")],
                                            to: [PlaylistInfo(uri: "m3u:a.m3u8", name: "A2"), PlaylistInfo(uri: "m3u:c.m3u8", name: "C")])
        XCTAssertEqual(renamed.map(\.member), ["PlaylistChanged"])
    }

    func testPlaylistIDsAreStableValidPaths() {
        let id = PlaylistInfo.id(forURI: "m3u:Late%20Night.m3u8")
        XCTAssertEqual(id, PlaylistInfo(uri: "m3u:Late%20Night.m3u8", name: "x").id)
        XCTAssertTrue(id.rawValue.hasPrefix("/io/github/groovebridge/Playlist/"))
        XCTAssertNotEqual(id, PlaylistInfo.id(forURI: "m3u:Late%20Night.m3u"))
        XCTAssertEqual(PlaylistInfo.id(forURI: "").rawValue, "/io/github/groovebridge/Playlist/_")
        XCTAssertNotNil(ObjectPath(PlaylistInfo.id(forURI: String(repeating: "é☃", count: 300)).rawValue))
        XCTAssertEqual(PlaylistInfo.id(forURI: "f").rawValue, "/io/github/groovebridge/Playlist/MY", "RFC 4648 base32")
    }

    func state() -> PlayerState {
        var s = PlayerState()
        s.tracklist = Self.meta([4, 5, 6])
        s.metadata = s.tracklist[0]
        s.canEditTracks = true
        s.supportedUriSchemes = ["local", "file"]
        s.playlists = [PlaylistInfo(uri: "m3u:b.m3u8", name: "beta"), PlaylistInfo(uri: "m3u:a.m3u8", name: "Alpha"),
                       PlaylistInfo(uri: "m3u:c.m3u8", name: "gamma")]
        return s
    }

    func answer(_ iface: String, _ member: String, _ args: [DBusValue], _ s: PlayerState? = nil) -> (MethodReply, [PlayerCommand]) {
        let call = MethodCall(path: MPRISInterface.objectPath, interface: iface, member: member, sender: ":1.9",
                              signature: args.map(\.signature).joined(), args: args)
        let r = MPRISCalls.answer(call, state: s ?? state(), nowUs: 0, status: { "" })
        return (r.reply, r.commands)
    }

    func testTrackListCalls() {
        let id5 = DBusValue.objectPath(TrackMetadata.trackID(tlid: 5)), stale = DBusValue.objectPath(TrackMetadata.trackID(tlid: 99))
        let (reply, none) = answer(MPRISInterface.trackList, "GetTracksMetadata", [.array(element: "o", [id5, stale])])
        guard case .values(let v) = reply, case .array(_, let found)? = v.first else { return XCTFail("\(reply)") }
        XCTAssertEqual(found, [Self.meta([5])[0].dbusValue], "known ids only")
        XCTAssertEqual(none, [.wantCovers(tlids: [5])], "covers are asked for when a client wants the metadata")
        XCTAssertEqual(answer(MPRISInterface.trackList, "GoTo", [id5]).1, [.goTo(tlid: 5)])
        XCTAssertEqual(answer(MPRISInterface.trackList, "GoTo", [stale]).1, [], "a stale id has no effect")
        XCTAssertEqual(answer(MPRISInterface.trackList, "RemoveTrack", [stale]).1, [])
        XCTAssertEqual(answer(MPRISInterface.trackList, "RemoveTrack", [id5]).1, [.removeTrack(tlid: 5)])
        XCTAssertEqual(answer(MPRISInterface.trackList, "AddTrack", [.string("local:track:x"), .objectPath(TrackMetadata.noTrackID), .bool(true)]).1,
                       [.addTrack(uri: "local:track:x", afterTlid: 4, play: true)], "NoTrack: the start of Tracks, after the current track")
        XCTAssertEqual(answer(MPRISInterface.trackList, "AddTrack", [.string("local:track:x"), id5, .bool(false)]).1,
                       [.addTrack(uri: "local:track:x", afterTlid: 5, play: false)])
        let (refused, taken) = answer(MPRISInterface.trackList, "AddTrack", [.string("spotify:x"), id5, .bool(false)])
        guard case .error(let name, _) = refused else { return XCTFail("an unsupported scheme was taken") }
        XCTAssertEqual(name, "org.freedesktop.DBus.Error.InvalidArgs")
        XCTAssertEqual(taken, [])
        var readOnly = state()
        readOnly.canEditTracks = false
        XCTAssertEqual(answer(MPRISInterface.trackList, "RemoveTrack", [id5], readOnly).1, [], "CanEditTracks false: no effect")
    }

    func testGetPlaylistsInBothOrdersBothWays() {
        func names(_ args: [DBusValue]) -> [String] {
            guard case .values(let v) = answer(MPRISInterface.playlists, "GetPlaylists", args).0,
                  case .array(_, let list)? = v.first else { return ["error"] }
            return list.compactMap { if case .structure(let f) = $0 { return f[1].stringValue }; return nil }
        }
        XCTAssertEqual(names([.uint32(0), .uint32(10), .string("User"), .bool(false)]), ["beta", "Alpha", "gamma"])
        XCTAssertEqual(names([.uint32(0), .uint32(10), .string("Alphabetical"), .bool(false)]), ["Alpha", "beta", "gamma"])
        XCTAssertEqual(names([.uint32(0), .uint32(10), .string("Alphabetical"), .bool(true)]), ["gamma", "beta", "Alpha"])
        XCTAssertEqual(names([.uint32(1), .uint32(1), .string("User"), .bool(false)]), ["Alpha"])
        XCTAssertEqual(names([.uint32(.max), .uint32(.max), .string("User"), .bool(false)]), [])
        XCTAssertEqual(names([.uint32(0), .uint32(1), .string("Created"), .bool(false)]), ["error"], "an ordering not offered")
        let a = state().playlists[1]
        XCTAssertEqual(answer(MPRISInterface.playlists, "ActivatePlaylist", [.objectPath(a.id)]).1, [.activatePlaylist(uri: "m3u:a.m3u8")])
        XCTAssertEqual(answer(MPRISInterface.playlists, "ActivatePlaylist", [.objectPath(PlaylistInfo.id(forURI: "m3u:gone"))]).1, [])
    }

    /// The spec's members of both interfaces (mpris-spec, org.mpris.MediaPlayer2.TrackList.xml and
    /// Playlists.xml), as kind name(argument types): our introspection declares exactly these.
    func testIntrospectionMatchesTheSpecMemberForMember() throws {
        let spec: [String: Set<String>] = [
            MPRISInterface.trackList: [
                "method GetTracksMetadata(in ao, out aa{sv})", "method AddTrack(in s, in o, in b)",
                "method RemoveTrack(in o)", "method GoTo(in o)",
                "property Tracks ao read invalidates", "property CanEditTracks b read",
                "signal TrackListReplaced(ao, o)", "signal TrackAdded(a{sv}, o)", "signal TrackRemoved(o)",
                "signal TrackMetadataChanged(o, a{sv})",
            ],
            MPRISInterface.playlists: [
                "method ActivatePlaylist(in o)", "method GetPlaylists(in u, in u, in s, in b, out a(oss))",
                "property PlaylistCount u read", "property Orderings as read", "property ActivePlaylist (b(oss)) read",
                "signal PlaylistChanged((oss))",
            ],
        ]
        let doc = try XMLDocument(xmlString: mprisIntrospectionXML)
        for (iface, expected) in spec {
            let node = try XCTUnwrap(try doc.nodes(forXPath: "//interface[@name='\(iface)']").first as? XMLElement)
            var got = Set<String>()
            for e in node.children?.compactMap({ $0 as? XMLElement }) ?? [] {
                let name = e.attribute(forName: "name")?.stringValue ?? ""
                let args = (e.elements(forName: "arg")).map { a -> String in
                    let type = a.attribute(forName: "type")?.stringValue ?? ""
                    return a.attribute(forName: "direction").map { "\($0.stringValue ?? "") \(type)" } ?? type
                }
                switch e.name {
                case "method", "signal": got.insert("\(e.name!) \(name)(\(args.joined(separator: ", ")))")
                case "property":
                    let emits = e.elements(forName: "annotation").first?.attribute(forName: "value")?.stringValue
                    got.insert("property \(name) \(e.attribute(forName: "type")!.stringValue!) \(e.attribute(forName: "access")!.stringValue!)"
                               + (emits.map { " \($0)" } ?? ""))
                default: break
                }
            }
            XCTAssertEqual(got, expected, iface)
        }
    }

    // MARK: - In the reducer

    func testTracksFromTheCurrentOnWithASignalForEachChange() {
        var r = ReducerTests.Rig(listening: false)
        r.lists = true
        r.feed(.reply(.tracklist([Self.tl(1), Self.tl(2), Self.tl(3)])))
        XCTAssertEqual(r.take(), ["Tracks~", "TrackListReplaced [1 2 3] 1"], "Tracks: invalidated, never its value")
        XCTAssertEqual(r.state.published.tracklist.first?.trackID, r.state.published.metadata.trackID,
                       "mpris:trackid is the first of Tracks")
        r.feed(.event(.trackPlaybackStarted(Self.tl(2))))
        XCTAssertEqual(r.take(), ["art T2", "call refreshNeighbours", "Metadata=T2 Tracks~", "TrackRemoved 1"])
        r.advance(toMs: r.nowMs + BridgeTuning.trackListSettleMs)
        XCTAssertEqual(r.take(), ["call refreshTracklist"], "the window moved on: fetched again")
        r.feed(.reply(.tracklist([Self.tl(1), Self.tl(2), Self.tl(3), Self.tl(4)])))
        XCTAssertEqual(r.take(), ["Tracks~", "TrackAdded T4 3"], "4 after 3")
        XCTAssertEqual(r.state.published.tracklist.map(\.trackID), [2, 3, 4].map(TrackMetadata.trackID(tlid:)))
    }

    func testAClearAndAddIsOneFetchAndOneTrackListReplaced() {
        var r = ReducerTests.Rig(listening: false)
        r.lists = true
        r.feed(.reply(.tracklist([Self.tl(1), Self.tl(2)])))
        _ = r.take()
        r.feed(.event(.tracklistChanged))  // clear
        r.nowMs += 5
        r.feed(.event(.tracklistChanged))  // add
        XCTAssertEqual(r.take(), ["call refreshNeighbours"])
        r.advance(toMs: r.nowMs + BridgeTuning.trackListSettleMs)
        XCTAssertEqual(r.take(), ["call refreshTracklist"])
        r.feed(.reply(.tracklist([Self.tl(7), Self.tl(8)])))
        XCTAssertEqual(r.take(), ["Tracks~", "TrackListReplaced [7 8] 1"], "the current track is still 1 until 7 starts")
    }

    func testThePlaylistActivatedHereIsActiveWhileItsTracksPlay() {
        var r = ReducerTests.Rig(listening: false)
        r.lists = true
        let a = PlaylistInfo(uri: "m3u:a.m3u8", name: "A"), b = PlaylistInfo(uri: "m3u:b.m3u8", name: "B")
        r.feed(.reply(.playlists([a, b])))
        XCTAssertEqual(r.take(), ["PlaylistCount=2"])
        r.feed(.command(.activatePlaylist(uri: a.uri)))
        XCTAssertEqual(r.take(), ["call activatePlaylist(uri: \"m3u:a.m3u8\")"])
        r.feed(.reply(.activated(uri: a.uri, tlids: [7, 8])))
        XCTAssertNil(r.state.published.activePlaylist, "not yet playing")
        r.feed(.event(.trackPlaybackStarted(Self.tl(7))))
        XCTAssertEqual(r.state.published.activePlaylist, a)
        r.feed(.event(.trackPlaybackStarted(Self.tl(3))))
        XCTAssertNil(r.state.published.activePlaylist, "something else plays")
        var renamed = a
        renamed.name = "A, renamed"
        r.feed(.event(.playlistChanged))
        _ = r.take()
        r.feed(.reply(.playlists([renamed, b])))
        XCTAssertEqual(r.take(), ["position 0 ms", "PlaylistChanged A, renamed"], "(a name is no property)")
        r.feed(.event(.playlistDeleted))
        XCTAssertEqual(r.take(), ["call refreshPlaylists"])
        r.feed(.reply(.playlists([b])))
        XCTAssertEqual(r.take(), ["PlaylistCount=1"])
    }

    func testCoversForTheListAreFetchedWhenAskedForOnceAndSignalled() {
        var r = ReducerTests.Rig(listening: false)
        r.lists = true
        r.feed(.reply(.tracklist([Self.tl(1), Self.tl(2), Self.tl(3)])))
        _ = r.take()
        r.feed(.command(.wantCovers(tlids: [2, 3])))
        XCTAssertEqual(r.take().count, 0, "(fetchCovers is not in the trace)")
        XCTAssertEqual(r.state.coversAsked, ["local:track:2", "local:track:3"])
        var effects = r.state.reduce(.command(.wantCovers(tlids: [2, 3])), at: r.moment)
        XCTAssertFalse(effects.contains { if case .fetchCovers = $0 { return true }; return false }, "asked twice")
        effects = r.state.reduce(.command(.wantCovers(tlids: [3, 2, 99])), at: r.moment)
        XCTAssertTrue(effects.isEmpty)
        r.feed(.coverReady(trackURI: "local:track:2", file: "file:///two.jpg"))
        XCTAssertEqual(r.take(), ["position 5000 ms", "TrackMetadataChanged 2 T2"])
        XCTAssertEqual(r.state.published.tracklist[1].artURL, "file:///two.jpg")
        r.feed(.coverReady(trackURI: "local:track:3", file: nil))
        XCTAssertNil(r.state.published.tracklist[2].artURL, "no cover: no key, never a broken one")
    }
}
