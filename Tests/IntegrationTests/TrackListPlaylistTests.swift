import DBus
import Foundation
import MPRIS
import Support
import XCTest

/// TrackList and Playlists on the rig: Mopidy's m3u backend with playlists the test writes, the
/// tracklist it really has, and the signals a client sees.
final class TrackListPlaylistTests: DaemonTestCase {
    var watcher: SignalWatcher?

    /// The library queued afresh, playing its first track: a test before this class may have
    /// left the house near the end of its tracklist, with fewer tracks from the current one on.
    override func setUpWithError() throws {
        _ = try Rig.get().command(["cmd": "queue"])
        try super.setUpWithError()
    }

    override func tearDown() {
        watcher?.stop()
        if let rig {
            _ = try? rig.command(["cmd": "queue"])
            for name in ["Evening", "Morning"] {
                try? FileManager.default.removeItem(atPath: "\(rig.info.playlists_dir)/\(name).m3u8")
            }
            _ = try? rig.rpc("core.playlists.refresh")
        }
        super.tearDown()
    }

    @discardableResult
    func call(_ iface: String, _ member: String, _ args: [DBusValue] = []) throws -> [DBusValue] {
        try client.call(destination: MPRISService.busName, path: MPRISInterface.objectPath, interface: iface,
                        member: member, args: args)
    }

    func get(_ iface: String, _ name: String) throws -> DBusValue? {
        try call(MPRISInterface.properties, "Get", [.string(iface), .string(name)]).first?.variantValue
    }

    /// The tlids in Tracks.
    func tracks() throws -> [Int] {
        guard case .array(_, let ids)? = try get(MPRISInterface.trackList, "Tracks") else { return [] }
        return ids.compactMap { $0.objectPathValue.flatMap(TrackMetadata.tlid(of:)) }
    }

    /// Mopidy's tracklist from its current track on, as tlids.
    func mopidyFromCurrent() throws -> [Int] {
        let all = (try rig.rpc("core.tracklist.get_tl_tracks") as? [[String: Any]] ?? []).compactMap { $0["tlid"] as? Int }
        let current = (try rig.rpc("core.playback.get_current_tl_track") as? [String: Any])?["tlid"] as? Int
        let from = current.flatMap { all.firstIndex(of: $0) } ?? 0
        return Array(all[from...])
    }

    func libraryURIs() throws -> [(uri: String, title: String)] {
        (try rig.rpc("core.tracklist.get_tl_tracks") as? [[String: Any]] ?? []).compactMap { t in
            guard let track = t["track"] as? [String: Any], let uri = track["uri"] as? String,
                  uri.hasPrefix("local:") else { return nil }
            return (uri, track["name"] as? String ?? "")
        }
    }

    func writePlaylist(_ name: String, _ items: [(uri: String, title: String)]) throws {
        try FileManager.default.createDirectory(atPath: rig.info.playlists_dir, withIntermediateDirectories: true)
        let text = "#EXTM3U\n" + items.map { "#EXTINF:-1,\($0.title)\n\($0.uri)\n" }.joined()
        try text.write(toFile: "\(rig.info.playlists_dir)/\(name).m3u8", atomically: true, encoding: .utf8)
    }

    func playlists(_ order: String, reverse: Bool = false) throws -> [(id: ObjectPath, name: String)] {
        let r = try call(MPRISInterface.playlists, "GetPlaylists", [.uint32(0), .uint32(50), .string(order), .bool(reverse)])
        guard case .array(_, let list)? = r.first else { return [] }
        return list.compactMap { p in
            guard case .structure(let f) = p, let id = f[0].objectPathValue, let name = f[1].stringValue else { return nil }
            return (id, name)
        }
    }

    func testTracksAreMopidysTracklistFromTheCurrentTrackOn() throws {
        XCTAssertEqual(try get(MPRISInterface.root, "HasTrackList"), .bool(true))
        XCTAssertTrue(waitUntil(5) { (try? tracks()) == (try? mopidyFromCurrent()) && !((try? tracks()) ?? []).isEmpty },
                      "Tracks \((try? tracks()) ?? []), Mopidy \((try? mopidyFromCurrent()) ?? [])")
        guard case .dict(_, _, let meta)? = try get(MPRISInterface.player, "Metadata"),
              let id = meta.first(where: { $0.0.stringValue == "mpris:trackid" })?.1.variantValue?.objectPathValue else {
            return XCTFail("no trackid")
        }
        XCTAssertEqual(TrackMetadata.tlid(of: id), try tracks().first, "mpris:trackid is the first of Tracks")
        // GetTracksMetadata answers from the bridge's copy, each with its trackid.
        let ids = try tracks().prefix(3).map { DBusValue.objectPath(TrackMetadata.trackID(tlid: $0)) }
        let r = try call(MPRISInterface.trackList, "GetTracksMetadata", [.array(element: "o", ids)])
        guard case .array(_, let maps)? = r.first else { return XCTFail("\(r)") }
        XCTAssertEqual(maps.count, 3)
        // Their covers come when asked for: fetched through the cache, then in the answer.
        XCTAssertTrue(waitUntil(5) {
            guard case .array(_, let again)? = (try? call(MPRISInterface.trackList, "GetTracksMetadata", [.array(element: "o", ids)]))?.first
            else { return false }
            return again.contains { m in
                guard case .dict(_, _, let e) = m else { return false }
                return e.contains { $0.0.stringValue == "mpris:artUrl" && ($0.1.variantValue?.stringValue ?? "").hasPrefix("file://") }
            }
        }, "no cover in GetTracksMetadata")
        let g = try runCommand(["gdbus", "call", "--session", "--dest", MPRISService.busName, "--object-path",
                                MPRISInterface.objectPath, "--method", "org.mpris.MediaPlayer2.TrackList.GetTracksMetadata",
                                "[" + ids.compactMap { $0.objectPathValue.map { "'\($0.rawValue)'" } }.joined(separator: ",") + "]"],
                               env: rig.clientEnvironment)
        XCTAssertTrue(g.out.contains("'xesam:title'"), g.out + g.err)
    }

    func testGoToAddTrackAndRemoveTrackChangeMopidysTracklistAndSignalIt() throws {
        XCTAssertTrue(waitUntil(5) { ((try? tracks()) ?? []).count >= 3 })
        let owner = try XCTUnwrap(client.owner(of: MPRISService.busName))
        let w = try SignalWatcher(address: rig.info.bus_address, sender: owner)
        watcher = w
        let t = try tracks()
        guard t.count >= 3 else { return XCTFail("Tracks holds \(t.count) tracks, 3 wanted: \(t)") }
        // GoTo the third: Mopidy plays it, and Metadata follows.
        try call(MPRISInterface.trackList, "GoTo", [.objectPath(TrackMetadata.trackID(tlid: t[2]))])
        XCTAssertTrue(waitUntil(5) {
            ((try? rig.rpc("core.playback.get_current_tl_track")) as? [String: Any])?["tlid"] as? Int == t[2]
        }, "GoTo did not reach Mopidy")
        XCTAssertTrue(waitUntil(5) { (try? tracks())?.first == t[2] }, "Tracks does not start at the GoTo track")
        // AddTrack after the current one.
        let uri = try XCTUnwrap(libraryURIs().first?.uri)
        let before = Set(try mopidyFromCurrent())
        let t0 = monotonicUs()
        try call(MPRISInterface.trackList, "AddTrack", [.string(uri), .objectPath(TrackMetadata.trackID(tlid: t[2])), .bool(false)])
        var added: Int?
        XCTAssertTrue(waitUntil(5) {
            added = Set((try? mopidyFromCurrent()) ?? []).subtracting(before).first
            return added != nil
        }, "AddTrack did not reach Mopidy")
        let new = try XCTUnwrap(added)
        XCTAssertEqual(try mopidyFromCurrent().dropFirst().first, new, "not added right after the current track")
        XCTAssertTrue(waitUntil(3) { w.all.contains { $0.us > t0 && $0.member == "TrackAdded" } }, "no TrackAdded")
        let addedSignal = try XCTUnwrap(w.all.first { $0.us > t0 && $0.member == "TrackAdded" })
        XCTAssertEqual(addedSignal.args.last?.objectPathValue, TrackMetadata.trackID(tlid: t[2]), "AfterTrack")
        XCTAssertTrue(waitUntil(3) { (try? tracks()) == (try? mopidyFromCurrent()) })
        // RemoveTrack it again.
        let t1 = monotonicUs()
        try call(MPRISInterface.trackList, "RemoveTrack", [.objectPath(TrackMetadata.trackID(tlid: new))])
        XCTAssertTrue(waitUntil(5) { !((try? mopidyFromCurrent()) ?? [new]).contains(new) }, "RemoveTrack did not reach Mopidy")
        XCTAssertTrue(waitUntil(3) {
            w.all.contains { $0.us > t1 && $0.member == "TrackRemoved" && $0.args.first?.objectPathValue == TrackMetadata.trackID(tlid: new) }
        }, "no TrackRemoved")
        // Every change of Tracks was an invalidation, never its value.
        let carried = w.changes(of: "Tracks")
        XCTAssertTrue(carried.isEmpty, "Tracks was sent with its value")
        let invalidations = w.all.filter { s in
            s.member == "PropertiesChanged" && s.args.count == 3 && s.args[2] == .strings(["Tracks"])
        }
        XCTAssertFalse(invalidations.isEmpty, "no invalidation of Tracks")
        // A stale id: no effect.
        let count = try XCTUnwrap(try rig.rpc("core.tracklist.get_length") as? Int)
        try call(MPRISInterface.trackList, "RemoveTrack", [.objectPath(TrackMetadata.trackID(tlid: 999_999))])
        // Mopidy's calls are made one at a time, in order: once a track added after it is in,
        // the stale RemoveTrack has been handled.
        let later = try XCTUnwrap(try libraryURIs().first?.uri)
        try call(MPRISInterface.trackList, "AddTrack", [.string(later), .objectPath(TrackMetadata.noTrackID), .bool(false)])
        XCTAssertTrue(waitUntil(5) { (try? rig.rpc("core.tracklist.get_length")) as? Int == count + 1 },
                      "the stale RemoveTrack removed a track, or AddTrack did nothing")
    }

    func testPlaylistsListedInBothOrdersAndActivatedWithOneReplacedSignal() throws {
        let lib = try libraryURIs()
        guard lib.count >= 3 else { return XCTFail("the library holds \(lib.count) tracks, 3 wanted") }
        try writePlaylist("Morning", [lib[2], lib[0]])
        try writePlaylist("Evening", [lib[1], lib[2]])
        try rig.rpc("core.playlists.refresh")
        XCTAssertTrue(waitUntil(5) { (try? get(MPRISInterface.playlists, "PlaylistCount")) == .uint32(2) },
                      "PlaylistCount: \(String(describing: try? get(MPRISInterface.playlists, "PlaylistCount")))")
        XCTAssertEqual(try get(MPRISInterface.playlists, "Orderings"), .strings(["Alphabetical", "User"]))
        XCTAssertEqual(try playlists("Alphabetical").map(\.name), ["Evening", "Morning"])
        XCTAssertEqual(try playlists("Alphabetical", reverse: true).map(\.name), ["Morning", "Evening"])
        let mopidyOrder = (try rig.rpc("core.playlists.as_list") as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        XCTAssertEqual(try playlists("User").map(\.name), mopidyOrder)
        // By hand, as doc/behaviour.md shows.
        let g = try runCommand(["gdbus", "call", "--session", "--dest", MPRISService.busName, "--object-path",
                                MPRISInterface.objectPath, "--method", "org.mpris.MediaPlayer2.Playlists.GetPlaylists",
                                "0", "10", "Alphabetical", "false"], env: rig.clientEnvironment)
        XCTAssertTrue(g.out.contains("'Evening'") && g.out.contains("/io/github/groovebridge/Playlist/"), g.out + g.err)

        let owner = try XCTUnwrap(client.owner(of: MPRISService.busName))
        let w = try SignalWatcher(address: rig.info.bus_address, sender: owner)
        watcher = w
        let evening = try XCTUnwrap(try playlists("User").first { $0.name == "Evening" })
        let t0 = monotonicUs()
        try call(MPRISInterface.playlists, "ActivatePlaylist", [.objectPath(evening.id)])
        XCTAssertTrue(waitUntil(5) { (try? rig.currentTitle()) == lib[1].title }, "Mopidy does not play the playlist's first item")
        XCTAssertTrue(waitUntil(5) { (try? playerctl("metadata", "title")) == lib[1].title }, "Metadata did not follow")
        XCTAssertTrue(waitUntil(5) { (try? tracks())?.count == 2 }, "Tracks: \((try? tracks()) ?? [])")
        XCTAssertEqual(try tracks(), try mopidyFromCurrent())
        guard case .structure(let active)? = try get(MPRISInterface.playlists, "ActivePlaylist"), active.count == 2,
              case .structure(let p) = active[1] else { return XCTFail("ActivePlaylist") }
        XCTAssertEqual(active[0], .bool(true))
        XCTAssertEqual(p[0].objectPathValue, evening.id)
        usleep(500_000)
        let replaced = w.all.filter { $0.us > t0 && $0.member == "TrackListReplaced" }
        XCTAssertEqual(replaced.count, 1, "one clear + add must be one TrackListReplaced: \(w.all.filter { $0.us > t0 }.map(\.member))")
        XCTAssertFalse(w.all.contains { $0.us > t0 && ($0.member == "TrackAdded" || $0.member == "TrackRemoved") },
                       "a signal storm beside the TrackListReplaced")
    }
}
