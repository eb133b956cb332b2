import Audio
@testable import Bridge
import DBus
import Mopidy
import Net
import XCTest

/// Suspend, the network and the route, through the reducer: inputs at given times → what the
/// bridge asks of the stream, the events socket and the route probe, in order.
final class LinkReducerTests: XCTestCase {
    typealias Rig = ReducerTests.Rig

    /// Home over plain http on loopback, remote over https: both routes configured.
    static var routed: Config {
        var c = Rig.config
        c.rpcURL = "http://127.0.0.1:1/mopidy/rpc"
        c.wsURL = "ws://127.0.0.1:1/mopidy/ws"
        c.remoteStreamURL = "https://remote.example/stream.flac"
        c.remoteRPCURL = "https://remote.example/api/mopidy/rpc"
        c.remoteWSURL = "wss://remote.example/ws/mopidy"
        return c
    }

    // MARK: - Suspend and resume

    func testSleepStopsTheStreamAndWakeListensAgainAtOnce() {
        var r = Rig()
        r.feed(.sleeping(true))
        XCTAssertEqual(r.take(), ["stream pause", "stream endWarm", "PlaybackStatus=Paused"])
        r.feed(.streamStatus(.paused, sequence: 2))
        XCTAssertEqual(r.take(), [], "already Paused")
        r.feed(.sleeping(true))
        XCTAssertEqual(r.take(), [], "a repeated signal is one")
        r.advance(toMs: 60_000)
        r.feed(.sleeping(false))
        XCTAssertEqual(r.take(), ["events reconnect", "stream play"])
        r.feed(.streamStatus(.connecting, sequence: 3))
        XCTAssertEqual(r.take(), ["PlaybackStatus=Playing"])
    }

    func testWakeLeavesThisComputerSilentWhenItWasNotListening() {
        var r = Rig(listening: false)
        r.feed(.sleeping(true))
        XCTAssertEqual(r.take(), ["stream endWarm"], "Paused already: the house plays, this computer does not; a connection kept warm is closed")
        r.feed(.sleeping(false))
        XCTAssertEqual(r.take(), ["events reconnect"])
    }

    /// A stream failing slowly (a refused password) keeps retrying through sleep, at once on wake.
    func testAFailingStreamIsRetriedAtOnceOnWake() {
        var r = Rig()
        r.feed(.streamStatus(.failed(reason: FailureReason(.unauthorized(httpStatus: 401), "HTTP 401"), retryInMs: 30_000), sequence: 2))
        _ = r.take()
        r.feed(.sleeping(true))
        XCTAssertEqual(r.take(), ["stream endWarm"], "the retries go on (only a kept connection is closed)")
        r.feed(.sleeping(false))
        XCTAssertEqual(r.take(), ["events reconnect", "stream retryNow"])
    }

    func testWithoutAStreamTheHouseIsPausedWhileAsleep() {
        var c = Config()
        c.serverDelayMs = 400
        var r = Rig(config: c, listening: false)
        XCTAssertEqual(r.state.published.playbackStatus, .playing)
        r.feed(.sleeping(true))
        XCTAssertEqual(r.take(), ["PlaybackStatus=Paused"])
        r.feed(.sleeping(false))
        XCTAssertEqual(r.take(), ["events reconnect", "PlaybackStatus=Playing"])
    }

    func testPlayWhileThoughtAsleepPlays() {
        var r = Rig()
        r.feed(.sleeping(true))
        r.feed(.streamStatus(.paused, sequence: 2))
        _ = r.take()
        r.feed(.command(.play))
        r.feed(.streamStatus(.connecting, sequence: 3))
        XCTAssertEqual(r.take(), ["stream play", "PlaybackStatus=Playing"])
        r.feed(.sleeping(false))
        XCTAssertEqual(r.take(), [], "awake already")
    }

    // MARK: - The network

    func testNoNetworkHoldsRetriesAndItsReturnRetriesAtOnce() {
        var r = Rig()
        r.feed(.streamStatus(.reconnecting(inMs: 500, reason: "refused"), sequence: 2))
        r.feed(.eventsDisconnected(reason: FailureReason("refused")))
        _ = r.take()
        r.feed(.network(.disconnected))
        XCTAssertEqual(r.take(), ["stream hold(true)", "stream endWarm", "events hold(true)"])
        r.feed(.network(.disconnected))
        XCTAssertEqual(r.take(), [])
        r.feed(.network(.connected))
        XCTAssertEqual(r.take(), ["stream hold(false)", "events hold(false)", "stream retryNow", "events retryNow"])
        r.feed(.network(.connected))
        XCTAssertEqual(r.take(), ["stream retryNow", "events retryNow"], "connected again (another network): retry now")
    }

    func testANetworkChangeWhileAllWorksTouchesNothing() {
        var r = Rig()
        r.feed(.network(.connected))
        XCTAssertEqual(r.take(), [])
    }

    func testTheServersEventsBackRetryTheStreamAtOnce() {
        var r = Rig()
        r.feed(.streamStatus(.reconnecting(inMs: 500, reason: "refused"), sequence: 2))
        r.feed(.eventsDisconnected(reason: FailureReason("refused")))
        _ = r.take()
        r.feed(.eventsConnected(url: Rig.ws))
        XCTAssertEqual(r.take(), ["call resync", "stream retryNow"])
    }

    func testNetworkManagersStates() {
        let table: [(UInt32, NetworkState?)] = [
            (0, nil), (10, .disconnected), (20, .disconnected), (30, nil), (40, nil),
            (50, .connected), (60, .connected), (70, .connected), (71, nil), (.max, nil),
        ]
        for (state, want) in table { XCTAssertEqual(NetworkState(networkManager: state), want, "\(state)") }
    }

    func testSystemBusSignalsAreCheckedBeforeTheyCount() {
        let login = ("/org/freedesktop/login1", "org.freedesktop.login1.Manager", "PrepareForSleep")
        let nm = ("/org/freedesktop/NetworkManager", "org.freedesktop.NetworkManager", "StateChanged")
        let table: [((String, String, String), [DBusValue], SystemBusEvent?)] = [
            (login, [.bool(true)], .sleeping(true)),
            (login, [.bool(false)], .sleeping(false)),
            (login, [], nil),
            (login, [.bool(true), .bool(true)], nil),
            (login, [.string("true")], nil),
            (login, [.uint32(1)], nil),
            (("/", login.1, login.2), [.bool(true)], nil),
            ((login.0, "org.freedesktop.login1.Session", login.2), [.bool(true)], nil),
            ((login.0, login.1, "PrepareForShutdown"), [.bool(true)], nil),
            (nm, [.uint32(70)], .network(.connected)),
            (nm, [.uint32(20)], .network(.disconnected)),
            (nm, [.uint32(40)], nil),
            (nm, [.int32(70)], nil),
            (nm, [.variant(.uint32(70))], nil),
            (nm, [], nil),
        ]
        for ((path, iface, member), args, want) in table {
            XCTAssertEqual(SystemBusEvent.from(path: path, interface: iface, member: member, args: args), want,
                           "\(path) \(iface).\(member) \(args)")
        }
    }
}
