import Foundation
import Mopidy
import Net
import Synchronization
import XCTest

/// Proves the rig is a real Groove Audio server: authenticated FLAC stream, JSON-RPC through both
/// URL layouts, events on the WebSocket.
final class RigTests: XCTestCase {
    func testStreamRefusesWithoutPasswordAndServesFLACWithIt() throws {
        let rig = try Rig.get()
        for url in [rig.info.stream_url, rig.info.native_stream_url, rig.info.nginx_stream_url] {
            let anon = try runCommand(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "5", url])
            XCTAssertEqual(anon.out, "401", "\(url) without credentials")
            // Credentials go to curl on stdin (--config -), not in argv.
            let authed = try runCommand(["curl", "-s", "-m", "3", "--config", "-", "-r", "0-", url, "-o", "-"],
                                 stdin: "user = \"listener:\(rig.info.password)\"\n")
            let head = Array(authed.bytes.prefix(64))
            XCTAssertGreaterThan(authed.bytes.count, 4096, "\(url) sent too little audio")
            if url.hasSuffix("/native.flac") {
                // Native FLAC: Icecast keeps no header, so a late joiner gets frames; a frame
                // header starts with the sync code 0xFFF8 somewhere in the first bytes.
                let bytes = Array(authed.bytes.prefix(65536))
                XCTAssertTrue(zip(bytes, bytes.dropFirst()).contains { $0 == 0xFF && ($1 & 0xFE) == 0xF8 }
                              || bytes.starts(with: Array("fLaC".utf8)), "\(url): no FLAC frame sync")
            } else {
                XCTAssertEqual(Array(head.prefix(4)), Array("OggS".utf8), "\(url) is not Ogg")
                XCTAssertTrue(head.count >= 33 && Array(head[29..<33]) == Array("FLAC".utf8),
                              "\(url): first Ogg page is not FLAC")
            }
        }
    }

    func testJSONRPCThroughBothLayouts() throws {
        let rig = try Rig.get()
        let groove = MopidyClient(endpoints: .init(rpcURL: rig.info.groove_rpc_url, wsURL: rig.info.groove_ws_url))
        let plain = MopidyClient(endpoints: .init(rpcURL: rig.info.mopidy_rpc_url, wsURL: rig.info.mopidy_ws_url))
        let a = try groove.currentTlTrack()
        let b = try plain.currentTlTrack()
        XCTAssertNotNil(a)
        XCTAssertEqual(a?.tlid, b?.tlid)
        XCTAssertEqual(try groove.state(), .playing)
        let titles = Set(rig.info.tracks.map(\.title))
        XCTAssertTrue(titles.contains(a?.track.name ?? ""), "unexpected track \(String(describing: a))")
    }

    func testWebSocketEventAfterNext() throws {
        let rig = try Rig.get()
        for url in [rig.info.groove_ws_url, rig.info.mopidy_ws_url] {
            let collector = EventCollector()
            let stream = MopidyEventStream(url: url, delegate: collector)
            stream.start()
            defer { stream.stop() }
            XCTAssertTrue(waitUntil(10) { collector.connected }, "no connection to \(url)")
            let before = try rig.currentTitle()
            try rig.rpc("core.playback.next")
            var started: TlTrack?
            XCTAssertTrue(waitUntil(2) {
                started = collector.events.compactMap { e -> TlTrack? in
                    if case .trackPlaybackStarted(let t) = e { return t }
                    return nil
                }.last
                return started != nil
            }, "no track_playback_started on \(url)")
            XCTAssertNotEqual(started?.track.name, before)
        }
    }
}

final class EventCollector: MopidyEventStreamDelegate {
    private let state = Mutex<(connected: Bool, events: [MopidyEvent])>((false, []))
    var connected: Bool { state.withLock { $0.connected } }
    var events: [MopidyEvent] { state.withLock { $0.events } }
    func eventStreamConnected(url: String) { state.withLock { $0.connected = true } }
    func eventStreamReceived(_ event: MopidyEvent) { state.withLock { $0.events.append(event) } }
    func eventStreamDisconnected(reason: FailureReason, retryInMs: Int) { state.withLock { $0.connected = false } }
}
