import Audio
@testable import Bridge
import Mopidy
import Net
import XCTest

/// Home network first, remote second: the route decided by the reducer from failures and probe
/// answers, as tables of inputs at given times.
final class RouteReducerTests: XCTestCase {
    typealias Rig = ReducerTests.Rig
    static let two = ReducerTests.two

    /// Listening at home, all working (t = 10 s).
    func atHome() -> Rig { Rig(config: LinkReducerTests.routed) }

    /// Home's front end stops at t = 10 s: the events socket drops and the stream retries.
    func homeGone(_ r: inout Rig) {
        r.feed(.eventsDisconnected(reason: FailureReason("ws://127.0.0.1:1/mopidy/ws: closed by server")))
        r.feed(.streamStatus(.reconnecting(inMs: 250, reason: "http://127.0.0.1:1/stream.flac ended the stream"), sequence: 2))
        _ = r.take()
    }

    /// On the remote route, listening, all working again.
    func onRemote() -> Rig {
        var r = atHome()
        homeGone(&r)
        r.advance(toMs: 13_500)
        r.feed(.probed(.remote, answered: true, detail: ""))
        r.advance(toMs: 15_000)
        r.feed(.eventsConnected(url: Rig.ws))
        r.sync(Snapshot(rpcURL: "https://remote.example/api/mopidy/rpc", current: ReducerTests.one,
                        state: .playing, positionMs: 10_000, volume: 50))
        r.feed(.streamStatus(.playing, sequence: 3))
        _ = r.take()
        return r
    }

    /// Remote is probed 1.5 s early, so that its answer is in when the 5 s are up.
    func testHomeFailingFiveSecondsMovesToRemoteWhenItAnswers() {
        var r = atHome()
        homeGone(&r)
        r.advance(toMs: 13_499)
        XCTAssertEqual(r.take(), [])
        r.advance(toMs: 13_500)
        XCTAssertEqual(r.take(), ["probe remote"])
        r.advance(toMs: 14_100)
        r.feed(.probed(.remote, answered: true, detail: ""))
        r.advance(toMs: 14_999)
        XCTAssertEqual(r.take(), [], "not within 5 s")
        r.advance(toMs: 15_000)
        XCTAssertEqual(r.take().map { String($0.prefix(16)) }, ["route remote", "stream configure"])
        XCTAssertEqual(r.state.link.route, .remote)
        XCTAssertEqual(r.state.streamConfig?.url, "https://remote.example/stream.flac")
        XCTAssertEqual(r.state.link.routeSinceMs, 15_000)
        XCTAssertEqual(r.state.link.routeReason,
                       "home fails for 5.0 s: http://127.0.0.1:1/stream.flac ended the stream; remote answers")
        XCTAssertEqual(r.state.link.routeSinceMs, 15_000)
        XCTAssertEqual(r.state.server.current?.track.name, "One", "the state stays")
    }

    /// The failing time and what follows from it are one value: each step of a failure and its
    /// end leaves exactly one thing due, and nothing of it outlives the failure.
    func testWhatIsDueFollowsTheFailureAndEndsWithIt() {
        var r = atHome()
        XCTAssertEqual(r.state.link.due, .nothing)
        homeGone(&r)
        XCTAssertEqual(r.state.link.due, .failing(sinceMs: 10_000, probeAtMs: 13_500))
        XCTAssertEqual(r.state.nextDeadlineMs, 13_500)
        r.advance(toMs: 13_500)
        XCTAssertEqual(r.state.link.due, .failing(sinceMs: 10_000, probeAtMs: nil), "the probe is under way")
        r.feed(.probed(.remote, answered: true, detail: ""))
        XCTAssertEqual(r.state.link.due, .switchOver(sinceMs: 10_000, atMs: 15_000))
        XCTAssertEqual(r.state.nextDeadlineMs, 15_000)
        // Home is back before the switch: nothing is due at home any more.
        r.feed(.eventsConnected(url: Rig.ws))
        r.feed(.streamStatus(.playing, sequence: 3))
        XCTAssertEqual(r.state.link.due, .nothing)
        // Asleep in the middle of a failure: the failure is forgotten with everything it scheduled.
        r.feed(.eventsDisconnected(reason: FailureReason("closed")))
        XCTAssertEqual(r.state.link.due.failingSinceMs, r.nowMs)
        r.feed(.sleeping(true))
        XCTAssertEqual(r.state.link.due, .nothing)
    }

    /// A host given alone: RPC follows the layout whose events answered, decided by the reducer
    /// in order with the route's switches; a socket that connected to the route just left moves
    /// nothing (RPC stays on the new route).
    func testRPCFollowsTheLayoutThatAnsweredOnTheRouteInUseOnly() throws {
        var c = Rig.config
        c.host = "musicbox.local"
        c.remoteRPCURL = "https://remote.example/api/mopidy/rpc"
        c.remoteWSURL = "wss://remote.example/ws/mopidy"
        c.remoteStreamURL = "https://remote.example/stream.flac"
        var r = Rig(config: c)
        let home = try XCTUnwrap(r.state.layouts(of: .home))
        XCTAssertEqual(home.count, 2)
        r.feed(.eventsDisconnected(reason: FailureReason("closed")))
        _ = r.take()
        r.feed(.eventsConnected(url: home[1].wsURL))
        XCTAssertTrue(r.take().contains("use \(home[1].rpcURL)"))
        r.feed(.eventsConnected(url: home[0].wsURL))
        XCTAssertTrue(r.take().contains("use \(home[0].rpcURL)"))

        // Home fails; remote answers and is taken.
        r.feed(.eventsDisconnected(reason: FailureReason("closed")))
        r.feed(.streamStatus(.reconnecting(inMs: 250, reason: "gone"), sequence: 50))
        r.advance(toMs: r.nowMs + 3500)
        r.feed(.probed(.remote, answered: true, detail: ""))
        r.advance(toMs: r.nowMs + 1500)
        XCTAssertEqual(r.state.link.route, .remote)
        _ = r.take()
        // The old route's socket connected just before the switch reached it: RPC stays remote.
        r.feed(.eventsConnected(url: home[1].wsURL))
        XCTAssertFalse(r.take().contains { $0.hasPrefix("use ") })
    }

    /// The server itself is down (a restart): remote does not answer either, so the bridge stays
    /// home and asks again every 30 s, a request, not a loop.
    func testServerDownEverywhereStaysHome() {
        var r = atHome()
        homeGone(&r)
        r.advance(toMs: 13_500)
        XCTAssertEqual(r.take(), ["probe remote"])
        r.feed(.probed(.remote, answered: false, detail: "stream at https://remote.example/stream.flac: HTTP 502"))
        XCTAssertEqual(r.take(), ["log route: remote does not answer either: stream at https://remote.example/stream.flac: HTTP 502"])
        XCTAssertEqual(r.state.link.route, .home)
        XCTAssertEqual(r.state.nextDeadlineMs, 43_500)
        r.advance(toMs: 43_500)
        XCTAssertEqual(r.take(), ["probe remote"])
    }

    /// Home comes back between remote's answer and the end of the 5 s: no switch.
    func testHomeBackBeforeTheFiveSecondsAreUpStays() {
        var r = atHome()
        homeGone(&r)
        r.advance(toMs: 13_500)
        r.feed(.probed(.remote, answered: true, detail: ""))
        r.advance(toMs: 14_000)
        r.feed(.eventsConnected(url: Rig.ws))
        r.feed(.streamStatus(.playing, sequence: 3))
        _ = r.take()
        r.advance(toMs: 20_000)
        XCTAssertEqual(r.take(), [])
        XCTAssertEqual(r.state.link.route, .home)
    }

    func testHomeBackWithinFiveSecondsIsNoSwitch() {
        var r = atHome()
        homeGone(&r)
        r.advance(toMs: 13_000)
        r.feed(.eventsConnected(url: Rig.ws))
        r.feed(.streamStatus(.playing, sequence: 3))
        _ = r.take()
        XCTAssertNil(r.state.nextDeadlineMs)
        r.advance(toMs: 100_000)
        XCTAssertEqual(r.take(), [])
    }

    /// On remote, home is probed every minute; when it answers the bridge goes home at the next
    /// track change heard, not in the middle of one.
    func testOnRemoteHomeIsProbedEveryMinuteAndTakenAtTheNextTrackChange() {
        var r = onRemote()
        XCTAssertEqual(r.state.nextDeadlineMs, 75_000)
        r.advance(toMs: 75_000)
        XCTAssertEqual(r.take(), ["probe home"])
        r.feed(.probed(.home, answered: false, detail: "refused"))
        XCTAssertEqual(r.take(), [], "said at debug level only")
        XCTAssertEqual(r.state.nextDeadlineMs, 135_000)
        r.advance(toMs: 135_000)
        r.feed(.probed(.home, answered: true, detail: ""))
        XCTAssertEqual(r.take(), ["probe home"], "listening: it waits for a track change")
        XCTAssertEqual(r.state.link.route, .remote)
        r.feed(.event(.trackPlaybackStarted(Self.two)))
        XCTAssertEqual(r.take(), [], "held until heard")
        r.advance(toMs: 136_400)
        XCTAssertEqual(r.take().map { String($0.prefix(16)) },
                       ["art Two", "call refreshNeighbours", "route home", "stream configure", "Metadata=Two"].map { String($0.prefix(16)) })
        XCTAssertEqual(r.state.link.route, .home)
        XCTAssertEqual(r.state.link.routeReason, "home answers again (at a track change)")
        XCTAssertEqual(r.state.streamConfig?.url, "http://127.0.0.1:1/stream.flac")
        XCTAssertEqual(r.state.link.due, .nothing, "at home nothing is probed")
    }

    func testOnRemoteHomeIsTakenAtOnceWhileNothingPlaysHere() {
        var r = onRemote()
        r.feed(.command(.pause))
        r.feed(.streamStatus(.paused, sequence: 4))
        _ = r.take()
        r.advance(toMs: 75_000)
        XCTAssertEqual(r.take(), ["probe home"])
        r.feed(.probed(.home, answered: true, detail: ""))
        XCTAssertEqual(r.take().map { String($0.prefix(16)) }, ["route home", "stream configure"])
    }

    func testANetworkChangeOnRemoteProbesHomeAtOnce() {
        var r = onRemote()
        r.advance(toMs: 20_000)
        r.feed(.network(.connected))
        XCTAssertEqual(r.take(), ["probe home"])
        r.feed(.network(.connected))
        XCTAssertEqual(r.take(), [], "one probe at a time")
    }

    func testNoProbesWhileAsleepOrWithoutNetwork() {
        var r = atHome()
        r.feed(.network(.disconnected))
        homeGone(&r)
        XCTAssertNil(r.state.nextDeadlineMs)
        r.advance(toMs: 100_000)
        XCTAssertEqual(r.take(), [])
        r.feed(.network(.connected))
        _ = r.take()
        XCTAssertEqual(r.state.nextDeadlineMs, 103_500, "home gets its 5 s again (remote probed 1.5 s before)")
        r.feed(.sleeping(true))
        XCTAssertNil(r.state.nextDeadlineMs)
    }

    /// A probe's answer about a route that is the one in use by then means nothing.
    func testAStaleProbeAnswerIsIgnored() {
        var r = onRemote()
        r.advance(toMs: 75_000)
        _ = r.take()
        r.feed(.command(.pause))
        r.feed(.streamStatus(.paused, sequence: 4))
        r.feed(.probed(.home, answered: true, detail: ""))
        XCTAssertEqual(r.state.link.route, .home)
        _ = r.take()
        r.feed(.probed(.home, answered: true, detail: ""))
        r.feed(.probed(.remote, answered: true, detail: ""))
        XCTAssertEqual(r.take(), [])
        XCTAssertEqual(r.state.link.route, .home)
    }

    func testWithoutARemoteRouteNothingIsProbedOrDue() {
        var r = Rig()
        homeGone(&r)
        XCTAssertNil(r.state.nextDeadlineMs)
        r.advance(toMs: 1_000_000)
        XCTAssertEqual(r.take(), [])
    }

    /// A reload that drops the remote keys while on remote goes home.
    func testAReloadWithoutRemoteGoesHome() {
        var r = onRemote()
        var c = LinkReducerTests.routed
        c.remoteStreamURL = nil; c.remoteRPCURL = nil; c.remoteWSURL = nil
        r.feed(.reload(c))
        XCTAssertEqual(r.take().map { String($0.prefix(16)) }, ["route home", "stream configure"])
        XCTAssertEqual(r.state.link.routeReason, "no remote route is configured")
    }

    func testRemoteKeysGoTogether() {
        var c = Config()
        c.host = "h"
        XCTAssertNoThrow(try c.checkRoutes())
        c.remoteRPCURL = "https://r/rpc"
        XCTAssertThrowsError(try c.checkRoutes()) {
            XCTAssertEqual(($0 as? ConfigError)?.message, "remote_rpc_url and remote_ws_url go together (or set remote_host)")
        }
        c.remoteWSURL = "wss://r/ws"
        XCTAssertThrowsError(try c.checkRoutes()) {
            XCTAssertEqual(($0 as? ConfigError)?.message, "the remote route has no stream: set remote_stream_url (or remote_host)")
        }
        c = Config()
        c.host = "h"
        c.remoteHost = "groove.invalid"
        XCTAssertNoThrow(try c.checkRoutes())
        XCTAssertEqual(c.effectiveRemoteStreamURL, "https://groove.invalid/stream.flac")
        XCTAssertEqual(c.remoteLayouts, [MopidyEndpoints(rpcURL: "https://groove.invalid/api/mopidy/rpc",
                                                         wsURL: "wss://groove.invalid/ws/mopidy")])
        c.remoteHost = "fd7a:115c::1"
        XCTAssertEqual(c.effectiveRemoteStreamURL, "https://[fd7a:115c::1]/stream.flac")
    }
}
