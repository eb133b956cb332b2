import Audio
@testable import Bridge
import MPRIS
import Mopidy
import Net
import XCTest

final class ServerStateTests: XCTestCase {
    func tl(_ id: Int, _ artists: [String] = ["A"], uri: String = "local:track:1") -> TlTrack {
        TlTrack(tlid: id, track: Track(uri: uri, name: "T\(id)", artists: artists, lengthMs: 30_000))
    }

    func testMappingToMPRIS() {
        var s = ServerState()
        let here = LocalState()
        s.synced = true
        s.setCurrent(tl(4))
        s.state = .paused
        s.volume = 42
        s.repeatOn = true
        s.single = true
        s.nextTlid = nil
        let p = playerState(s, here)
        XCTAssertEqual(p.playbackStatus, .paused)
        XCTAssertEqual(p.volume, 0.42, accuracy: 1e-9)
        XCTAssertEqual(p.loopStatus, .track)
        XCTAssertEqual(p.metadata.trackID, TrackMetadata.trackID(tlid: 4))
        XCTAssertEqual(p.metadata.lengthUs, 30_000_000)
        XCTAssertTrue(p.canGoNext, "repeat on: always a next track")
        XCTAssertTrue(p.canSeek)
        s.repeatOn = false
        XCTAssertEqual(playerState(s, here).loopStatus, .none)
        XCTAssertFalse(playerState(s, here).canGoNext)
    }

    func testStatusIsWhatThisComputerHears() {
        var s = ServerState()
        var here = LocalState()
        s.synced = true
        s.state = .playing
        s.setCurrent(tl(1))
        here.stream = .paused
        XCTAssertEqual(playerState(s, here).playbackStatus, .paused, "house plays, this computer does not")
        for active in [StreamStatus.playing, .buffering, .connecting, .reconnecting(inMs: 500, reason: "x")] {
            here.stream = active
            XCTAssertEqual(playerState(s, here).playbackStatus, .playing, "\(active)")
        }
        here.stream = .failed(reason: FailureReason(.unauthorized(httpStatus: 401), "password"), retryInMs: 30_000)
        XCTAssertEqual(playerState(s, here).playbackStatus, .paused)
        here.stream = .playing
        s.state = .paused
        XCTAssertEqual(playerState(s, here).playbackStatus, .paused, "house paused")
        s.state = .stopped
        XCTAssertEqual(playerState(s, here).playbackStatus, .stopped)
        // Mopidy gone, audio still flowing: the last track stays while it is heard, and the
        // house's state as last known (a stop heard before it went shows).
        s.synced = false
        here.stream = .playing
        XCTAssertEqual(playerState(s, here).metadata.title, "T1")
        XCTAssertEqual(playerState(s, here).playbackStatus, .stopped)
        s.state = .playing
        XCTAssertEqual(playerState(s, here).playbackStatus, .playing)
        here.stream = .reconnecting(inMs: 1000, reason: "down")
        XCTAssertEqual(playerState(s, here).metadata, .none)
        XCTAssertEqual(playerState(s, here).playbackStatus, .stopped)
    }

    func testVolumeModeAndPositionWhileLocallyPaused() {
        var s = ServerState()
        var here = LocalState()
        s.synced = true
        s.volume = 40
        here.volume = 0.9
        XCTAssertEqual(playerState(s, here).volume, 0.4, accuracy: 1e-9)
        here.volumeMode = .local
        XCTAssertEqual(playerState(s, here).volume, 0.9, accuracy: 1e-9)
        s.state = .playing
        s.positionMs = 1000
        s.positionAnchorUs = 0
        here.stream = .paused
        here.frozen = .init(positionMs: 1500, sinceUs: 0)
        // The house's position goes on; what is published is where listening stopped.
        XCTAssertEqual(playerState(s, here).position(nowUs: 2_000_000), 1_500_000)
        XCTAssertFalse(playerState(s, here).positionAdvancing)
        here.stream = .playing
        XCTAssertEqual(playerState(s, here).position(nowUs: 2_000_000), 3_000_000, "heard: the house's position")
    }

    func testAsleepOrStoppedHereWhateverTheHouseDoes() {
        var s = ServerState()
        var here = LocalState()
        s.synced = true
        s.state = .playing
        s.setCurrent(tl(1))
        s.positionMs = 1000
        here.stream = .playing
        XCTAssertTrue(playerState(s, here).positionAdvancing)
        here.asleep = true
        XCTAssertEqual(playerState(s, here).playbackStatus, .paused, "nobody hears anything while asleep")
        XCTAssertFalse(playerState(s, here).positionAdvancing)
        here.asleep = false
        here.stopPressed = true
        XCTAssertEqual(playerState(s, here).playbackStatus, .stopped, "Stop pressed here")
        XCTAssertEqual(playerState(s, here).position(nowUs: 2_000_000), 0)
        XCTAssertEqual(playerState(s, here).metadata.title, "T1", "the track stays shown")
    }

    func testDisconnectedMeansNoControlsThatNeedMopidy() {
        var s = ServerState()
        let here = LocalState()
        s.setCurrent(tl(1))
        s.nextTlid = 2
        let p = playerState(s, here)
        XCTAssertFalse(p.canGoNext)
        XCTAssertFalse(p.canSeek)
        XCTAssertTrue(p.canPlay, "GNOME hides players whose CanPlay is false")
        XCTAssertEqual(playerState(ServerState(), LocalState()).metadata, .none)
    }

    func testArtistOrderFromAnUnorderedBackendDoesNotFlicker() {
        var s = ServerState()
        s.setCurrent(tl(2, ["Ada", "Alan"]))
        s.setCurrent(tl(2, ["Alan", "Ada"]))
        XCTAssertEqual(s.current?.track.artists, ["Ada", "Alan"])
        s.setCurrent(tl(3, ["Alan", "Ada"], uri: "local:track:2"))
        XCTAssertEqual(s.current?.track.artists, ["Alan", "Ada"], "a new track takes its own order")
    }

    func testNewTrackDropsStreamTitleAndArt() {
        var s = ServerState()
        let here = LocalState()
        s.synced = true
        s.setCurrent(tl(1))
        s.streamTitle = "Live"
        s.artURL = "file:///a.jpg"
        s.setCurrent(tl(1))
        XCTAssertEqual(playerState(s, here).metadata.title, "Live")
        s.setCurrent(tl(2, uri: "local:track:2"))
        XCTAssertEqual(playerState(s, here).metadata.title, "T2")
        XCTAssertNil(playerState(s, here).metadata.artURL)
    }
}
