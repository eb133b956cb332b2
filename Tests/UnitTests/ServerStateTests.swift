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
        s.connected = true
        s.setCurrent(tl(4))
        s.state = .paused
        s.volume = 42
        s.repeatOn = true
        s.single = true
        s.nextTlid = nil
        let p = s.playerState()
        XCTAssertEqual(p.playbackStatus, .paused)
        XCTAssertEqual(p.volume, 0.42, accuracy: 1e-9)
        XCTAssertEqual(p.loopStatus, .track)
        XCTAssertEqual(p.metadata.trackID, TrackMetadata.trackID(tlid: 4))
        XCTAssertEqual(p.metadata.lengthUs, 30_000_000)
        XCTAssertTrue(p.canGoNext, "repeat on: always a next track")
        XCTAssertTrue(p.canSeek)
        s.repeatOn = false
        XCTAssertEqual(s.playerState().loopStatus, .none)
        XCTAssertFalse(s.playerState().canGoNext)
    }

    func testStatusIsWhatThisComputerHears() {
        var s = ServerState()
        s.connected = true
        s.state = .playing
        s.setCurrent(tl(1))
        s.localStream = .paused
        XCTAssertEqual(s.playerState().playbackStatus, .paused, "house plays, this computer does not")
        for active in [StreamStatus.playing, .buffering, .connecting, .reconnecting(inMs: 500, reason: "x")] {
            s.localStream = active
            XCTAssertEqual(s.playerState().playbackStatus, .playing, "\(active)")
        }
        s.localStream = .failed(reason: FailureReason(.unauthorized(httpStatus: 401), "password"), retryInMs: 30_000)
        XCTAssertEqual(s.playerState().playbackStatus, .paused)
        s.localStream = .playing
        s.state = .paused
        XCTAssertEqual(s.playerState().playbackStatus, .paused, "house paused")
        s.state = .stopped
        XCTAssertEqual(s.playerState().playbackStatus, .stopped)
        // Mopidy gone, audio still flowing: the last track stays while it is heard.
        s.connected = false
        s.localStream = .playing
        XCTAssertEqual(s.playerState().metadata.title, "T1")
        XCTAssertEqual(s.playerState().playbackStatus, .playing)
        s.localStream = .reconnecting(inMs: 1000, reason: "down")
        XCTAssertEqual(s.playerState().metadata, .none)
        XCTAssertEqual(s.playerState().playbackStatus, .stopped)
    }

    func testVolumeModeAndPositionWhileLocallyPaused() {
        var s = ServerState()
        s.connected = true
        s.volume = 40
        s.localVolume = 0.9
        XCTAssertEqual(s.playerState().volume, 0.4, accuracy: 1e-9)
        s.volumeMode = .local
        XCTAssertEqual(s.playerState().volume, 0.9, accuracy: 1e-9)
        s.state = .playing
        s.positionMs = 1000
        s.positionAnchorUs = 0
        s.localStream = .paused
        s.frozen = .init(positionMs: 1500, sinceUs: 0)
        // The house's position goes on; what is published is where listening stopped.
        XCTAssertEqual(s.playerState().position(nowUs: 2_000_000), 1_500_000)
        XCTAssertFalse(s.playerState().positionAdvancing)
        s.localStream = .playing
        XCTAssertEqual(s.playerState().position(nowUs: 2_000_000), 3_000_000, "heard: the house's position")
    }

    func testDisconnectedMeansNoControlsThatNeedMopidy() {
        var s = ServerState()
        s.setCurrent(tl(1))
        s.nextTlid = 2
        let p = s.playerState()
        XCTAssertFalse(p.canGoNext)
        XCTAssertFalse(p.canSeek)
        XCTAssertTrue(p.canPlay, "GNOME hides players whose CanPlay is false")
        XCTAssertEqual(ServerState().playerState().metadata, .none)
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
        s.connected = true
        s.setCurrent(tl(1))
        s.streamTitle = "Live"
        s.artURL = "file:///a.jpg"
        s.setCurrent(tl(1))
        XCTAssertEqual(s.playerState().metadata.title, "Live")
        s.setCurrent(tl(2, uri: "local:track:2"))
        XCTAssertEqual(s.playerState().metadata.title, "T2")
        XCTAssertNil(s.playerState().metadata.artURL)
    }
}
