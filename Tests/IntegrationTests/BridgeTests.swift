import DBus
import Foundation
import MPRIS
import Support
import XCTest

/// The groove-bridge binary against the rig's Mopidy (Groove URL layout, through nginx), on the
/// rig's bus, driven by playerctl.
final class BridgeTests: XCTestCase {
    var rig: Rig!
    var daemon: Process!
    var log = Pipe()
    var client: DBusConnection!

    static var binary: URL { Rig.projectRoot.appendingPathComponent(".build/debug/groove-bridge") }

    override func setUpWithError() throws {
        rig = try Rig.get()
        client = try DBusConnection(address: rig.info.bus_address)
        XCTAssertTrue(waitUntil(5) { client.owner(of: MPRISService.busName) == nil }, "a bridge is already on the bus")
        let p = Process()
        p.executableURL = BridgeTests.binary
        p.arguments = ["--rpc-url", rig.info.groove_rpc_url, "--ws-url", rig.info.groove_ws_url]
        p.environment = rig.clientEnvironment
        p.standardError = log
        p.standardOutput = log
        try p.run()
        daemon = p
        XCTAssertTrue(waitUntil(10) { (try? playerctl("status")) == "Playing" }, "bridge did not come up playing")
    }

    override func tearDown() {
        if let daemon, daemon.isRunning {
            daemon.terminate()
            daemon.waitUntilExit()
        }
        daemon = nil
    }

    @discardableResult
    func playerctl(_ args: String...) throws -> String {
        let r = try runCommand(["playerctl", "-p", "groove"] + args, env: rig.clientEnvironment, timeout: 10)
        guard r.status == 0 else { throw Rig.RigError(message: "playerctl \(args): \(r.err)") }
        return r.out.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func mopidyTrack() throws -> [String: Any] {
        let tl = try rig.rpc("core.playback.get_current_tl_track") as? [String: Any]
        return tl?["track"] as? [String: Any] ?? [:]
    }

    func testMetadataFollowsMopidyAndNextIsFast() throws {
        // Every track of the library once: titles, artists (two, non-ASCII), album, length.
        var seen = Set<String>()
        for _ in 0..<rig.info.tracks.count {
            let track = try mopidyTrack()
            let title = track["name"] as? String ?? ""
            let artists = (track["artists"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
            XCTAssertTrue(waitUntil(2) { (try? playerctl("metadata", "--format", "{{title}}")) == title },
                          "widget does not show \(title)")
            let shown = try playerctl("metadata", "--format", "{{artist}}|{{album}}|{{mpris:length}}|{{xesam:url}}")
            let parts = shown.components(separatedBy: "|")
            XCTAssertEqual(Set(parts[0].components(separatedBy: ", ")), Set(artists), title)
            XCTAssertEqual(parts[1], (track["album"] as? [String: Any])?["name"] as? String)
            XCTAssertEqual(parts[2], String((track["length"] as? Int ?? 0) * 1000))
            XCTAssertEqual(parts[3], track["uri"] as? String)
            seen.insert(title)

            let t0 = Date()
            try playerctl("next")
            let want = rig.info.tracks[(rig.info.tracks.firstIndex { $0.title == title }! + 1) % rig.info.tracks.count].title
            XCTAssertTrue(waitUntil(1) { (try? playerctl("metadata", "--format", "{{title}}")) == want },
                          "after next, not \(want) within 1 s")
            XCTAssertLessThan(Date().timeIntervalSince(t0), 1.5)
        }
        XCTAssertEqual(seen, Set(rig.info.tracks.map(\.title)))
        XCTAssertTrue(seen.contains("Café Ñandú – 東京"))
    }

    func testVolumeBothWays() throws {
        defer { _ = try? rig.rpc("core.mixer.set_volume", ["volume": 100]) }
        try playerctl("volume", "0.3")
        XCTAssertTrue(waitUntil(2) { (try? rig.rpc("core.mixer.get_volume")) as? Int == 30 }, "Mopidy volume not 30")
        try rig.rpc("core.mixer.set_volume", ["volume": 70])
        XCTAssertTrue(waitUntil(2) { Double((try? playerctl("volume")) ?? "") == 0.7 }, "Volume not 0.7 after Mopidy changed it")
    }

    func testShuffleAndLoopRoundTrips() throws {
        defer {
            _ = try? rig.rpc("core.tracklist.set_random", ["value": false])
            _ = try? rig.rpc("core.tracklist.set_single", ["value": false])
            _ = try? rig.rpc("core.tracklist.set_repeat", ["value": true])
        }
        try playerctl("shuffle", "On")
        XCTAssertTrue(waitUntil(2) { (try? rig.rpc("core.tracklist.get_random")) as? Bool == true })
        XCTAssertTrue(waitUntil(2) { (try? playerctl("shuffle")) == "On" })
        try playerctl("loop", "Track")
        XCTAssertTrue(waitUntil(2) { (try? rig.rpc("core.tracklist.get_single")) as? Bool == true })
        XCTAssertEqual(try rig.rpc("core.tracklist.get_repeat") as? Bool, true)
        XCTAssertTrue(waitUntil(2) { (try? playerctl("loop")) == "Track" })
        try rig.rpc("core.tracklist.set_single", ["value": false])
        XCTAssertTrue(waitUntil(2) { (try? playerctl("loop")) == "Playlist" })
    }

    func testPauseAndPlayReachMopidy() throws {
        try playerctl("pause")
        XCTAssertTrue(waitUntil(2) { (try? rig.rpc("core.playback.get_state")) as? String == "paused" })
        XCTAssertTrue(waitUntil(2) { (try? playerctl("status")) == "Paused" })
        try playerctl("play")
        XCTAssertTrue(waitUntil(2) { (try? rig.rpc("core.playback.get_state")) as? String == "playing" })
        XCTAssertTrue(waitUntil(2) { (try? playerctl("status")) == "Playing" })
    }

    func testGetStaysFastWhileMopidyHangsAndStatusSaysWhy() throws {
        try rig.signal("mopidy", "STOP")
        defer { try? rig.signal("mopidy", "CONT") }
        try playerctl("next")  // queued behind an RPC that cannot be answered
        var times: [Int64] = []
        for _ in 0..<50 {
            let t0 = monotonicUs()
            _ = try client.call(destination: MPRISService.busName, path: MPRISInterface.objectPath,
                                interface: MPRISInterface.properties, member: "GetAll",
                                args: [.string(MPRISInterface.player)])
            times.append(monotonicUs() - t0)
        }
        times.sort()
        print("GetAll round trip while Mopidy hangs: median \(times[25]) µs, max \(times[49]) µs")
        XCTAssertLessThan(times[25], 5_000)
        XCTAssertLessThan(times[49], 100_000)
        try rig.signal("mopidy", "CONT")
        XCTAssertTrue(waitUntil(10) { (try? playerctl("status")) == "Playing" })
    }

    func testQuitExitsCleanly() throws {
        try playerctl("metadata")  // up
        _ = try client.call(destination: MPRISService.busName, path: MPRISInterface.objectPath,
                            interface: MPRISInterface.root, member: "Quit")
        XCTAssertTrue(waitUntil(5) { !daemon.isRunning })
        XCTAssertEqual(daemon.terminationStatus, 0)
        XCTAssertTrue(waitUntil(3) { client.owner(of: MPRISService.busName) == nil })
    }

    func testStatusCommandReportsTheServer() throws {
        let r = try runCommand([BridgeTests.binary.path, "status", "--json"], env: rig.clientEnvironment)
        XCTAssertEqual(r.status, 0, r.err)
        XCTAssertTrue(r.out.contains(rig.info.groove_rpc_url), r.out)
        XCTAssertTrue(r.out.contains("\"events\":\"connected\""), r.out)
    }
}
