import Audio
@testable import Bridge
import DBus
import MPRIS
import Mopidy
import Net
import XCTest

/// The reducer alone: sequences of inputs at given times → what is published, signalled and
/// asked for, in order. No threads, sockets or clocks.
final class ReducerTests: XCTestCase {
    static func tl(_ id: Int, _ name: String) -> TlTrack {
        TlTrack(tlid: id, track: Track(uri: "local:track:\(id)", name: name, artists: ["A"], lengthMs: 30_000))
    }
    static let one = tl(1, "One"), two = tl(2, "Two"), three = tl(3, "Three")

    /// The bridge as it runs most of the time: Mopidy connected and playing One, this computer
    /// listening, the stream 1 s behind and the server's own delay 400 ms (heard 1.4 s late).
    struct Rig {
        var state: BridgeState
        var nowMs = 10_000
        var streamDelayMs = 1000
        /// How long of `streamDelayMs` the output has starved (a stall).
        var streamStarvedMs = 0
        var trace: [String] = []
        /// Whether the trace shows TrackList/Playlists fetches and signals (their own tests).
        var lists = false
        /// Whether the trace shows where track changes are looked for in the music (their own tests).
        var learning = false
        /// Whether the trace shows the house's silence told to the stream (their own tests).
        var silences = false

        init(config: Config = Rig.config, listening: Bool = true) {
            state = BridgeState(config: config, canRaise: false)
            var s = Snapshot(rpcURL: "http://127.0.0.1:1/mopidy/rpc", current: ReducerTests.one, state: .playing,
                             positionMs: 5000, volume: 50)
            s.repeatOn = true
            feed(.eventsConnected(url: Rig.ws))
            sync(s)
            feed(.artReady(trackURI: ReducerTests.one.track.uri, file: "file:///one.jpg"))
            if listening { feed(.streamStatus(.playing, sequence: 1)) }
            trace = []
        }

        /// Where the events socket connects in these tests: none of the layouts, so RPC's layout
        /// stays (RouteReducerTests connects to the layouts themselves).
        static let ws = "ws://127.0.0.1:1/events"

        static var config: Config {
            var c = Config()
            c.streamURL = "http://127.0.0.1:1/stream.flac"
            c.serverDelayMs = 400
            return c
        }

        var moment: Moment { Moment(nowUs: Int64(nowMs) * 1000, streamDelayMs: streamDelayMs, streamStarvedMs: streamStarvedMs) }

        /// The house stopped from elsewhere, heard here, and fetched: stopped on One.
        mutating func stopHouseHeard() {
            feed(.event(.playbackStateChanged(old: .playing, new: .stopped)))
            advance(toMs: nowMs + 1400)
            sync(Snapshot(rpcURL: "http://127.0.0.1:1/mopidy/rpc", current: ReducerTests.one, state: .stopped, positionMs: 0, volume: 50))
        }

        /// Reduces `input` now and records what came out.
        mutating func feed(_ input: Input) {
            let before = state.published
            var last = before
            for e in state.reduce(input, at: moment) {
                switch e {
                case .publish(let p):
                    let changes = p.changes(since: last)
                    let changed = changes.flatMap(\.changed).map { "\($0.0)=\(Rig.short($0.1))" }
                        + changes.flatMap(\.invalidated).map { "\($0)~" }
                    trace.append(changed.isEmpty ? "position \(p.position(nowUs: moment.nowUs) / 1000) ms" : changed.joined(separator: " "))
                    last = p
                case .seeked(let us): trace.append("Seeked \(us / 1000) ms")
                case .call(let c):
                    if case .resync = c { trace.append("call resync"); break }
                    if lists || ![.refreshTracklist, .refreshPlaylists].contains(c) { trace.append("call \(c)") }
                case .stream(.findBoundary(let r)): if learning { trace.append("look for the change of \(r.changedAtMs) ms, \(r.serverDelayMs) ms on") }
                case .stream(.changeAnnounced(let ms)): if learning { trace.append("a change at \(ms) ms") }
                case .stream(.silence(let s)):
                    guard silences else { break }
                    switch s {
                    case .none: trace.append("silence none")
                    case .untilTold: trace.append("silence until told")
                    case .until(let ms): trace.append("silence until \(ms) ms")
                    }
                case .stream(let c): trace.append("stream \(c)")
                case .fetchArt(let t): trace.append("art \(t.name ?? "")")
                case .fetchCovers: break
                case .notify(let t, _): trace.append("notify \(t.name ?? "")")
                case .openWebInterface: trace.append("browser")
                case .quit: trace.append("quit")
                case .log(let level, let text): if level <= .warning { trace.append("log \(text)") }
                case .signal(_, let member, let args): if lists { trace.append("\(member) \(Rig.short(args))") }
                case .askToSignIn(let r): trace.append("sign in: \(r.sentence)")
                case .events(let c): trace.append("events \(c)")
                case .route(let r, _): trace.append("route \(r.rawValue)")
                case .useLayout(let l): trace.append("use \(l.rpcURL)")
                case .probe(let r, _, _): trace.append("probe \(r.rawValue)")
                }
            }
        }

        /// Mopidy's answer to the newest fetch.
        mutating func sync(_ s: Snapshot) {
            var s = s
            s.generation = state.resyncGeneration
            feed(.reply(.synced(s)))
        }

        /// Moves the clock on, handing in `.due` when a deadline passes on the way.
        mutating func advance(toMs t: Int) {
            while let d = state.nextDeadlineMs, d <= t {
                nowMs = max(nowMs, d)
                feed(.due)
            }
            nowMs = t
        }

        mutating func take() -> [String] {
            defer { trace = [] }
            return trace
        }

        /// Signal arguments in a trace: track ids by their tlid, playlists by name.
        static func short(_ args: [DBusValue]) -> String {
            args.map { a -> String in
                switch a {
                case .objectPath(let p): return TrackMetadata.tlid(of: p).map(String.init) ?? (p == TrackMetadata.noTrackID ? "start" : p.rawValue)
                case .array(_, let items): return "[" + short(items) + "]"
                case .structure(let items): return items.count > 1 ? short(items[1]) : ""
                default: return short(a)
                }
            }.joined(separator: " ")
        }

        /// A property value in a trace: Metadata by its title.
        static func short(_ v: DBusValue) -> String {
            switch v {
            case .string(let s): return s
            case .bool(let b): return "\(b)"
            case .double(let d): return "\(d)"
            case .uint32(let u): return "\(u)"
            case .dict(_, _, let entries):
                for (k, v) in entries where k.stringValue == "xesam:title" { return short(v.variantValue ?? v) }
                return ""
            default: return "\(v)"
            }
        }

        var title: String? { state.published.metadata.title }
    }

    func testTrackChangeWhileListeningIsPublishedWhenHeard() {
        var r = Rig()
        r.feed(.event(.trackPlaybackStarted(Self.two)))
        XCTAssertEqual(r.title, "One", "published before it is heard")
        r.advance(toMs: 11_399)
        XCTAssertEqual(r.title, "One")
        r.advance(toMs: 11_400)
        XCTAssertEqual(r.take(), ["art Two", "call refreshNeighbours", "Metadata=Two"])
    }

    /// Issue #23 (3): a change in the first seconds after Play, before the stream's delay is
    /// measured, is held for the best estimate (the join and the sound server's buffer, plus the
    /// server's own delay), not published at once.
    func testTrackChangeRightAfterPlayIsHeldByTheExpectedDelay() {
        var r = Rig(listening: false)
        r.feed(.command(.play))
        r.feed(.streamStatus(.connecting, sequence: 1))
        _ = r.take()
        let expected = StreamConfig(url: "http://127.0.0.1:1/").expectedDelayMs + 400
        r.feed(.event(.trackPlaybackStarted(Self.two)))
        XCTAssertEqual(r.title, "One", "published before the stream could play it")
        r.streamDelayMs = 0  // playing, not measured yet
        r.feed(.streamStatus(.playing, sequence: 2))
        r.advance(toMs: 10_000 + expected - 1)
        XCTAssertEqual(r.title, "One")
        r.advance(toMs: 10_000 + expected)
        XCTAssertEqual(r.title, "Two")
    }

    /// What waits by the estimate is timed again by the stream's first measure: here the stream
    /// is heard 700 ms late, sooner than estimated.
    func testAChangeHeldByTheEstimateIsTimedAgainByTheFirstMeasure() {
        var r = Rig(listening: false)
        r.feed(.command(.play))
        r.feed(.streamStatus(.connecting, sequence: 1))
        r.feed(.event(.trackPlaybackStarted(Self.two)))
        r.streamDelayMs = 0
        r.feed(.streamStatus(.playing, sequence: 2))
        r.advance(toMs: 10_300)
        XCTAssertEqual(r.title, "One")
        r.streamDelayMs = 700  // the first measure
        r.advance(toMs: 11_099)
        XCTAssertEqual(r.title, "One")
        r.advance(toMs: 11_100)
        XCTAssertEqual(r.title, "Two", "700 ms of stream + 400 ms of server after Mopidy's change")
    }

    /// Issue #23: the house paused while the link held the stream. What it played before its
    /// pause comes late, in the stall's burst: Paused waits while the output starves (the delay
    /// grows with the stall, looked at every 100 ms) and comes when that audio is heard.
    func testAPauseHeldThroughAStallWaitsForTheAudioBeforeIt() {
        var r = Rig()
        r.feed(.event(.trackPlaybackPaused(Self.one, positionMs: 6000)))  // heard at 11 400 on a clean link
        r.advance(toMs: 10_600)
        // The stall: the output had 400 ms when the last audio came at 10 200 and has starved since.
        for t in stride(from: 10_600, through: 14_000, by: 50) {
            r.streamStarvedMs = t - 10_600
            r.streamDelayMs = 1000 + r.streamStarvedMs
            r.advance(toMs: t)
            XCTAssertEqual(r.state.published.playbackStatus, .playing, "Paused shown at \(t) ms, before the audio it follows")
        }
        let wakes = r.take().count
        XCTAssertEqual(wakes, 0)
        // The burst: what the house played before its pause plays 4.4 s late.
        r.streamStarvedMs = 0
        r.streamDelayMs = 4400
        r.advance(toMs: 14_799)
        XCTAssertEqual(r.state.published.playbackStatus, .playing)
        r.advance(toMs: 14_800)
        XCTAssertEqual(r.state.published.playbackStatus, .paused, "4.4 s of stream + 400 ms of server after Mopidy's pause")
    }

    /// While the output starves, a change is looked at again as the stall goes on, not at every
    /// millisecond the growing delay moves it by.
    func testAStallIsNotChasedEveryMillisecond() {
        var r = Rig()
        r.feed(.event(.trackPlaybackStarted(Self.two)))  // due at 11 400
        // The output ran dry at 10 800 (600 ms before the change is due) and stays dry.
        var wakes = 0
        for t in 10_001...13_400 {
            r.streamStarvedMs = max(0, t - 10_800)
            r.streamDelayMs = 1000 + r.streamStarvedMs
            while let d = r.state.nextDeadlineMs, d <= t {
                r.nowMs = max(r.nowMs, d)
                r.feed(.due)
                wakes += 1
            }
            r.nowMs = t
        }
        XCTAssertEqual(r.title, "One", "shown during the stall, before its music")
        XCTAssertLessThanOrEqual(wakes, 6, "woken \(wakes) times in 2.6 s of stall")
    }

    /// A change due within `starvedGraceMs` of the moment the output ran dry is shown at its time
    /// however long the stall: a server that stops sending in a pause sends the audio before it
    /// and no more (Ogg holds back up to a page), and its Paused must not wait for the stream.
    func testAChangeDueAsTheOutputRunsDryIsNotHeldByTheStall() {
        var r = Rig()
        r.feed(.event(.trackPlaybackPaused(Self.one, positionMs: 6000)))  // due at 11 400
        for t in stride(from: 10_050, through: 13_000, by: 50) {
            r.streamStarvedMs = max(0, t - 11_100)  // dry 300 ms before it is due
            r.streamDelayMs = 1000 + r.streamStarvedMs
            r.advance(toMs: t)
            if t >= 11_400 { XCTAssertEqual(r.state.published.playbackStatus, .paused, "at \(t) ms") }
        }
    }

    /// While the stream reconnects, what it buffered plays out: held changes keep their times
    /// (the bridge's delay reads 0 then, which would show them at once).
    func testHeldChangesKeepTheirTimesWhileTheStreamReconnects() {
        var r = Rig()
        r.feed(.event(.trackPlaybackStarted(Self.two)))  // due at 11 400
        r.advance(toMs: 10_500)
        r.streamDelayMs = 0
        r.feed(.streamStatus(.reconnecting(inMs: 250, reason: "ended"), sequence: 2))
        r.feed(.event(.volumeChanged(40)))  // any input: the reducer looks at what it holds
        XCTAssertEqual(r.title, "One", "shown while the old connection's audio still plays")
        r.advance(toMs: 11_399)
        XCTAssertEqual(r.title, "One")
        r.advance(toMs: 11_400)
        XCTAssertEqual(r.title, "Two")
    }

    /// A measure that falls (the sound server's buffer shrank under a new stream) brings what is
    /// held forward by as much, from the next input on (here a volume change).
    func testAHeldChangeFollowsAFallingMeasure() {
        var r = Rig()
        r.feed(.event(.trackPlaybackStarted(Self.two)))
        r.advance(toMs: 10_500)
        r.streamDelayMs = 800
        r.feed(.event(.volumeChanged(40)))
        r.advance(toMs: 11_199)
        XCTAssertEqual(r.title, "One")
        r.advance(toMs: 11_200)
        XCTAssertEqual(r.title, "Two")
    }

    /// Issue #23: a command here answers with one start. The house moved from elsewhere 0.3 s
    /// after Play here started it: that second start is held until it is heard.
    func testASecondStartSoonAfterPlayHereIsHeld() {
        var r = Rig(listening: false)
        r.feed(.event(.playbackStateChanged(old: .playing, new: .stopped)))
        r.sync(Snapshot(rpcURL: "http://127.0.0.1:1/mopidy/rpc", current: Self.one, state: .stopped, positionMs: 0, volume: 50))
        r.feed(.command(.play))
        r.feed(.streamStatus(.playing, sequence: 1))
        r.feed(.event(.playbackStateChanged(old: .stopped, new: .playing)))
        r.feed(.event(.trackPlaybackStarted(Self.two)))
        XCTAssertEqual(r.title, "Two", "Play's own start is shown at once")
        r.advance(toMs: 10_300)
        r.feed(.event(.trackPlaybackStarted(Self.three)))  // previous, from another client
        XCTAssertEqual(r.title, "Two", "shown before it is heard")
        r.advance(toMs: 11_699)
        XCTAssertEqual(r.title, "Two")
        r.advance(toMs: 11_700)
        XCTAssertEqual(r.title, "Three")
        // Next here still shows its own start at once.
        r.feed(.command(.next))
        r.feed(.event(.trackPlaybackStarted(Self.one)))
        XCTAssertEqual(r.title, "One")
    }

    /// Play here while the house is paused resumes it, and Playing is shown at once: the user's
    /// own command, like Next, not a change from elsewhere to align with the music.
    func testPlayResumingThePausedHouseIsShownAtOnce() {
        var r = Rig(listening: false)
        r.feed(.event(.trackPlaybackPaused(Self.one, positionMs: 6000)))
        XCTAssertEqual(r.state.published.playbackStatus, .paused)
        r.feed(.command(.play))
        r.feed(.streamStatus(.connecting, sequence: 1))
        XCTAssertEqual(r.take().filter { $0.hasPrefix("call") || $0.hasPrefix("stream") }, ["stream play", "call resume"])
        r.feed(.event(.trackPlaybackResumed(Self.one, positionMs: 6000)))
        XCTAssertEqual(r.state.published.playbackStatus, .playing)
    }

    /// Mopidy's next/previous while it does not play changes its track without an event: once
    /// the call is answered, its state is fetched.
    func testNextWhileTheHouseIsStoppedFetchesWhatItHasNow() {
        var r = Rig(listening: false)
        r.feed(.event(.playbackStateChanged(old: .playing, new: .stopped)))
        XCTAssertEqual(r.take(), ["call resync", "PlaybackStatus=Stopped"], "a stop is followed by a fetch (the end of the tracklist has no track)")
        r.sync(Snapshot(rpcURL: "http://127.0.0.1:1/mopidy/rpc", current: Self.one, state: .stopped, positionMs: 0, volume: 50))
        _ = r.take()
        r.feed(.command(.next))
        r.feed(.reply(.done(.next)))
        XCTAssertEqual(r.take(), ["call next", "call resync"])
        r.sync(Snapshot(rpcURL: "http://127.0.0.1:1/mopidy/rpc", current: Self.two, state: .stopped, positionMs: 0, volume: 50))
        XCTAssertEqual(r.title, "Two")
    }

    /// Found by a random walk (`found-a-house-pause-names-the-track-next-moved-to`): the house's
    /// Next while stopped moves Mopidy's track with no event, and its pause then names the new
    /// track; so does a resume. The named track is shown.
    func testAPauseOrResumeShowsTheTrackItNames() {
        var r = Rig(listening: false)
        r.stopHouseHeard()
        r.feed(.event(.playbackStateChanged(old: .stopped, new: .paused)))
        r.feed(.event(.trackPlaybackPaused(Self.two, positionMs: 0)))
        XCTAssertEqual(r.title, "Two", "the paused track is not shown")
        XCTAssertTrue(r.take().contains("art Two"), "its cover is not fetched")
        r.feed(.event(.trackPlaybackResumed(Self.three, positionMs: 0)))
        XCTAssertEqual(r.title, "Three", "the resumed track is not shown")
        r.feed(.event(.trackPlaybackPaused(nil, positionMs: 0)))
        XCTAssertEqual(r.title, "Three", "a pause naming no track changed it")
    }

    /// Found by a random walk: Next here while the house is stopped moves Mopidy's track without
    /// starting it, so it awaits no start. Play soon after is answered by its own start, shown at
    /// once; a change from elsewhere right after it is held until heard, not taken for Next's.
    func testNextWhileTheHouseIsStoppedAwaitsNoStart() {
        var r = Rig()
        r.stopHouseHeard()
        XCTAssertEqual(r.state.published.playbackStatus, .stopped)
        r.feed(.command(.next))
        r.feed(.reply(.done(.next)))
        r.sync(Snapshot(rpcURL: "http://127.0.0.1:1/mopidy/rpc", current: Self.two, state: .stopped, positionMs: 0, volume: 50))
        r.advance(toMs: 12_000)
        r.feed(.command(.play))
        r.feed(.event(.playbackStateChanged(old: .stopped, new: .playing)))
        r.feed(.event(.trackPlaybackStarted(Self.two)))
        XCTAssertEqual(r.state.published.playbackStatus, .playing, "Play's own start, at once")
        r.advance(toMs: 12_500)
        r.feed(.event(.trackPlaybackStarted(Self.three)))
        XCTAssertEqual(r.title, "Two", "a change from elsewhere published before it is heard")
        r.advance(toMs: 12_500 + 1400)
        XCTAssertEqual(r.title, "Three")
    }

    /// Play here starting the stopped house, then Next here before Mopidy said it plays: both
    /// starts are the commands' own, shown at once.
    func testPlayThenNextOnAStoppedHouseAreBothShownAtOnce() {
        var r = Rig()
        r.stopHouseHeard()
        r.advance(toMs: 12_000)
        r.feed(.command(.play))
        r.feed(.command(.next))
        r.feed(.event(.playbackStateChanged(old: .stopped, new: .playing)))
        r.feed(.event(.trackPlaybackStarted(Self.one)))
        XCTAssertEqual(r.title, "One")
        r.advance(toMs: 12_300)
        r.feed(.event(.trackPlaybackStarted(Self.two)))
        XCTAssertEqual(r.title, "Two", "Next's own start, at once")
    }

    /// Stop here (the house's too, with `control = server`), then Next before Mopidy said it
    /// stopped: Mopidy moves the stopped house's track without a start, so none is awaited, and
    /// a start from elsewhere soon after is held until heard.
    func testNextAfterAStopHereAwaitsNoStart() {
        var c = Rig.config
        c.control = .server
        var r = Rig(config: c)
        r.feed(.command(.next))
        r.feed(.event(.trackPlaybackStarted(Self.two)))
        XCTAssertEqual(r.title, "Two")
        r.advance(toMs: 10_500)
        r.feed(.command(.stop))
        r.feed(.command(.next))
        r.feed(.event(.playbackStateChanged(old: .playing, new: .stopped)))
        r.advance(toMs: 11_000)
        r.feed(.command(.play))
        r.feed(.event(.playbackStateChanged(old: .stopped, new: .playing)))
        r.feed(.event(.trackPlaybackStarted(Self.three)))
        XCTAssertEqual(r.title, "Three", "Play's own start, at once")
        r.advance(toMs: 11_300)
        r.feed(.event(.trackPlaybackStarted(Self.one)))
        XCTAssertEqual(r.title, "Three", "a start from elsewhere published before it is heard")
    }

    /// The same answered during a fetch that began before it: the fetch may predate the move,
    /// so it is made again.
    /// Next here while the house's stop from elsewhere is still held back (the music plays on
    /// here): Mopidy moves without an event, so its state is fetched — once the stop is heard.
    func testNextWhileTheHouseStopIsHeldFetchesOnceItIsHeard() {
        var r = Rig()
        r.feed(.event(.playbackStateChanged(old: .playing, new: .stopped)))
        r.feed(.event(.trackPlaybackEnded(Self.one, positionMs: 5000)))
        r.advance(toMs: 10_500)
        _ = r.take()
        r.feed(.command(.next))
        r.feed(.reply(.done(.next)))
        XCTAssertEqual(r.take(), ["call next"], "fetched before the stop is heard")
        XCTAssertEqual(r.state.published.playbackStatus, .playing)
        r.advance(toMs: 11_400)
        XCTAssertEqual(r.state.published.playbackStatus, .stopped)
        XCTAssertTrue(r.take().contains("call resync"), "the track Mopidy moved to is never fetched")
        r.sync(Snapshot(rpcURL: "http://127.0.0.1:1/mopidy/rpc", current: Self.two, state: .stopped, positionMs: 0, volume: 50))
        XCTAssertEqual(r.title, "Two")
    }

    /// Found by a random walk: at the end of its tracklist (repeat off) Mopidy stops with no
    /// current track, and no event says so. Once the stop is heard, what it has is fetched.
    func testTheEndOfTheTracklistShowsNoTrackOnceHeard() {
        var r = Rig()
        // What Mopidy sends there (its stop, then the end of the stream).
        r.feed(.event(.playbackStateChanged(old: .playing, new: .stopped)))
        r.feed(.event(.playbackStateChanged(old: .stopped, new: .stopped)))
        r.feed(.event(.trackPlaybackEnded(Self.one, positionMs: 30_000)))
        XCTAssertEqual(r.take(), [], "the stop is held until heard")
        r.advance(toMs: 11_400)
        XCTAssertEqual(r.state.published.playbackStatus, .stopped)
        XCTAssertEqual(r.take().filter { $0 == "call resync" }.count, 1)
        r.sync(Snapshot(rpcURL: "http://127.0.0.1:1/mopidy/rpc", current: nil, state: .stopped, positionMs: 0, volume: 50))
        XCTAssertNil(r.title, "the last track is shown where the house has none")
    }

    /// Found by a random walk (pipewire, seed 4997547792908174848): Previous at the start of the
    /// tracklist with repeat off stops the house with no track, and a pause follows at once. The
    /// fetch waits for the pause to be heard, then shows that no track is left.
    func testAStopWithAPauseHeldAfterItFetchesOnceBothAreHeard() {
        var r = Rig()
        r.feed(.event(.playbackStateChanged(old: .playing, new: .stopped)))
        r.feed(.event(.playbackStateChanged(old: .stopped, new: .stopped)))
        r.feed(.event(.trackPlaybackEnded(Self.one, positionMs: 10_000)))
        r.advance(toMs: 10_100)
        r.feed(.event(.playbackStateChanged(old: .stopped, new: .paused)))  // heard at 11 500
        r.advance(toMs: 11_400)
        XCTAssertEqual(r.state.published.playbackStatus, .stopped)
        XCTAssertEqual(r.take().filter { $0 == "call resync" }, [], "the pause is still to be heard")
        r.advance(toMs: 11_500)
        XCTAssertEqual(r.state.published.playbackStatus, .paused)
        XCTAssertEqual(r.take().filter { $0 == "call resync" }.count, 1)
        r.sync(Snapshot(rpcURL: "http://127.0.0.1:1/mopidy/rpc", current: nil, state: .paused, positionMs: 0, volume: 50))
        XCTAssertNil(r.title, "the last track is shown where the house has none")
    }

    func testNextWhileTheHouseIsStoppedDuringAFetchFetchesAgain() {
        var r = Rig(listening: false)
        r.feed(.event(.playbackStateChanged(old: .playing, new: .stopped)))
        r.feed(.command(.next))
        r.feed(.eventsDisconnected(reason: FailureReason("gone")))
        r.feed(.eventsConnected(url: Rig.ws))
        _ = r.take()
        r.feed(.reply(.done(.next)))
        XCTAssertEqual(r.take(), [], "a fetch is out: it may predate the move")
        r.sync(Snapshot(rpcURL: "http://127.0.0.1:1/mopidy/rpc", current: Self.one, state: .stopped, positionMs: 0, volume: 50))
        XCTAssertEqual(r.take().filter { $0.hasPrefix("call") }, ["call resync"], "fetched again once it is in")
    }

    func testTrackChangeWhileNotListeningIsPublishedAtOnce() {
        var r = Rig(listening: false)
        r.feed(.event(.trackPlaybackStarted(Self.two)))
        XCTAssertEqual(r.take(), ["art Two", "call refreshNeighbours", "Metadata=Two"])
    }

    func testPauseHereWhileTheHousePlays() {
        var r = Rig()
        r.feed(.command(.pause))
        XCTAssertEqual(r.take(), ["stream pause"], "control = local: Mopidy is not asked")
        r.feed(.streamStatus(.paused, sequence: 2))
        XCTAssertEqual(r.take(), ["PlaybackStatus=Paused"])
        XCTAssertEqual(r.state.server.state, .playing, "the house plays on")
        r.feed(.command(.play))
        XCTAssertEqual(r.take(), ["stream play"], "the house plays: nothing to resume")
    }

    /// Headphones unplugged while listening (`on_output_lost = pause`): the player paused itself;
    /// Paused as after Pause, the house plays on, the position stands where listening stopped,
    /// and Play connects again.
    func testOutputLostIsPausedHereAndPlayComesBack() {
        var r = Rig()
        r.feed(.streamStatus(.outputLost(reason: "the sound output went away"), sequence: 2))
        XCTAssertEqual(r.take(), ["PlaybackStatus=Paused"])
        XCTAssertEqual(r.state.server.state, .playing, "the house plays on")
        XCTAssertFalse(r.state.listening)
        let frozen = r.state.published.position(nowUs: r.moment.nowUs)
        r.advance(toMs: 12_000)
        XCTAssertEqual(r.state.published.position(nowUs: r.moment.nowUs), frozen, "the position moved on while not heard")
        r.feed(.command(.play))
        XCTAssertEqual(r.take(), ["stream play"], "the house plays: nothing to resume")
    }

    func testControlServerPausesTheHouseToo() {
        var c = Rig.config
        c.control = .server
        var r = Rig(config: c)
        r.feed(.command(.pause))
        XCTAssertEqual(r.take(), ["stream pause", "call pause"])
    }

    func testNextPressedHereIsPublishedAtOnceAndDropsWhatWasHeld() {
        var r = Rig()
        r.feed(.event(.trackPlaybackStarted(Self.two)))  // a change elsewhere, held
        r.advance(toMs: 10_500)
        r.feed(.command(.next))
        XCTAssertEqual(r.take(), ["call next"])
        r.advance(toMs: 10_700)
        r.feed(.event(.trackPlaybackStarted(Self.three)))
        XCTAssertEqual(r.take(), ["art Three", "call refreshNeighbours", "Metadata=Three"])
        r.advance(toMs: 13_000)
        XCTAssertEqual(r.title, "Three", "the held change to Two came back")
        XCTAssertEqual(r.take(), [])
    }

    func testNextElsewhereMoreThanAWindowAfterOursIsHeld() {
        var r = Rig()
        r.feed(.command(.next))
        r.advance(toMs: 10_000 + 3000)
        _ = r.take()
        r.feed(.event(.trackPlaybackStarted(Self.two)))
        XCTAssertEqual(r.take(), [])
        r.advance(toMs: 13_000 + 1400)
        XCTAssertEqual(r.title, "Two")
    }

    /// Found by a random walk: Previous here, then the house stopped from elsewhere within the
    /// window of the user's command. The stop is not the command's answer: Stopped comes when
    /// the music ends here, not while it still plays.
    func testAStopElsewhereSoonAfterACommandHereIsHeldUntilHeard() {
        var r = Rig()
        r.feed(.command(.previous))
        r.advance(toMs: 10_300)
        r.feed(.event(.trackPlaybackStarted(Self.one)))
        _ = r.take()
        r.advance(toMs: 10_600)
        r.feed(.event(.playbackStateChanged(old: .playing, new: .stopped)))
        r.feed(.event(.trackPlaybackEnded(Self.one, positionMs: 300)))
        XCTAssertEqual(r.state.published.playbackStatus, .playing, "Stopped before the music ends here")
        r.advance(toMs: 10_600 + 1399)
        XCTAssertEqual(r.state.published.playbackStatus, .playing)
        r.advance(toMs: 10_600 + 1400)
        XCTAssertEqual(r.state.published.playbackStatus, .stopped)
    }

    func testSeekElsewhereIsSignalledWhenHeardAfterThePosition() {
        var r = Rig()
        r.feed(.event(.seeked(positionMs: 20_000)))
        XCTAssertEqual(r.take(), [])
        r.advance(toMs: 11_400)
        XCTAssertEqual(r.take(), ["position 20000 ms", "Seeked 20000 ms"])
        r.advance(toMs: 12_400)
        XCTAssertEqual(r.state.published.position(nowUs: 12_400_000), 21_000_000)
    }

    /// A client flooding commands while Mopidy is gone: the log says so on the 1st, 2nd, 4th,
    /// 8th … in a row, not once per command; a command that goes out starts the count again.
    func testCommandsRefusedInARowAreLoggedSparingly() {
        var r = Rig(listening: false)
        r.feed(.eventsDisconnected(reason: FailureReason("Mopidy at x is unreachable")))
        _ = r.take()
        for _ in 0..<100 { r.feed(.command(.next)) }
        XCTAssertEqual(r.take(), ["log next: Mopidy is not connected; ignored"]
            + [2, 4, 8, 16, 32, 64].map { "log next: Mopidy is not connected; ignored (\($0) in a row)" })
        r.feed(.eventsConnected(url: Rig.ws))
        r.sync(Snapshot(rpcURL: "http://127.0.0.1:1/mopidy/rpc", current: Self.one, state: .playing, positionMs: 0, volume: 50))
        r.feed(.command(.next))
        r.feed(.eventsDisconnected(reason: FailureReason("Mopidy at x is unreachable")))
        _ = r.take()
        r.feed(.command(.next))
        XCTAssertEqual(r.take(), ["log next: Mopidy is not connected; ignored"])
    }

    /// Issue #23 (seed 7828052134852582909): the house stopped, and Mopidy went away before the
    /// stop was heard here. Once heard, it is shown: Stopped at 0, not Playing with a position
    /// standing still.
    func testAHouseStopHeardAfterMopidyWentAwayIsShown() {
        var r = Rig()
        r.feed(.event(.playbackStateChanged(old: .playing, new: .stopped)))  // heard at 11 400
        r.advance(toMs: 10_300)
        r.feed(.eventsDisconnected(reason: FailureReason("Mopidy at x is unreachable")))
        XCTAssertEqual(r.state.published.playbackStatus, .playing, "the music before the stop still plays")
        r.advance(toMs: 11_400)
        XCTAssertEqual(r.state.published.playbackStatus, .stopped)
        XCTAssertEqual(r.state.published.position(nowUs: 12_000_000), 0)
    }

    func testServerGoingAwayAndComingBack() {
        var r = Rig(listening: false)
        r.feed(.eventsDisconnected(reason: FailureReason("Mopidy at x is unreachable")))
        XCTAssertEqual(r.take(), ["PlaybackStatus=Stopped Metadata= CanGoNext=false CanGoPrevious=false CanSeek=false CanEditTracks=false"])
        r.feed(.command(.next))
        XCTAssertEqual(r.take(), ["log next: Mopidy is not connected; ignored"])
        r.feed(.eventsConnected(url: Rig.ws))
        XCTAssertEqual(r.take(), ["call resync"])
        // Events that arrive while the state is fetched apply on top of it, in order.
        r.feed(.event(.volumeChanged(80)))
        r.feed(.event(.trackPlaybackStarted(Self.three)))
        XCTAssertEqual(r.take(), [])
        var s = Snapshot(rpcURL: "http://127.0.0.1:1/mopidy/rpc", current: Self.two, state: .playing, positionMs: 0, volume: 70)
        s.repeatOn = true
        r.sync(s)
        XCTAssertEqual(r.take(), ["art Two", "call refreshMixer", "art Three", "call refreshNeighbours",
                                  "PlaybackStatus=Paused Metadata=Three Volume=0.8 CanGoNext=true CanGoPrevious=true CanSeek=true CanEditTracks=true"])
    }

    func testFailedResyncIsRetriedWhileEventsFlow() {
        var r = Rig(listening: false)
        r.feed(.eventsConnected(url: Rig.ws))
        _ = r.take()
        r.feed(.reply(.failed(.resync(generation: r.state.resyncGeneration), reason: FailureReason("HTTP 502"))))
        XCTAssertEqual(r.take(), ["log resync: HTTP 502"])
        r.advance(toMs: 12_000)
        XCTAssertEqual(r.take(), ["call resync"])
    }

    func testReloadChangingTheServerDelayHoldsTheNextChangeForTheNewDelay() {
        var r = Rig()
        var c = Rig.config
        c.serverDelayMs = 900
        r.feed(.reload(c))
        XCTAssertEqual(r.take(), [], "a new server_delay_ms does not touch the stream")
        r.feed(.event(.trackPlaybackStarted(Self.two)))
        r.advance(toMs: 11_899)
        XCTAssertEqual(r.title, "One")
        r.advance(toMs: 11_900)
        XCTAssertEqual(r.title, "Two")
        _ = r.take()
        c.password = "new"
        r.feed(.reload(c))
        XCTAssertEqual(r.take().map { $0.prefix(16) }, ["stream configure"], "a new password reconnects")
        XCTAssertEqual(r.state.streamConfig?.password, "new")
    }

    /// A reload while the stream is failed (a refused password, say) tries again at once, even
    /// with nothing changed for the stream: the server may have been fixed.
    func testReloadWhileTheStreamIsFailedTriesAgainAtOnce() {
        var r = Rig()
        r.feed(.streamStatus(.failed(reason: FailureReason(.unauthorized(httpStatus: 401), "HTTP 401"), retryInMs: 30_000), sequence: 90))
        _ = r.take()
        r.feed(.reload(Rig.config))
        XCTAssertEqual(r.take().filter { $0.hasPrefix("stream") }, ["stream retryNow"])
    }

    func testALateStreamStatusNeverOverridesANewerOne() {
        var r = Rig()
        r.feed(.streamStatus(.paused, sequence: 5))
        r.feed(.streamStatus(.playing, sequence: 4))
        XCTAssertEqual(r.state.published.playbackStatus, .paused, "a stale .playing won over .paused")
        r.feed(.streamStatus(.connecting, sequence: 6))
        XCTAssertEqual(r.state.published.playbackStatus, .playing)
    }

    func testABurstOfTracklistChangesAsksOnceAndOnceMore() {
        var r = Rig()
        for _ in 0..<1000 { r.feed(.event(.tracklistChanged)) }
        XCTAssertEqual(r.take(), ["call refreshNeighbours"])
        r.feed(.reply(.neighbours(next: nil, previous: nil)))
        XCTAssertEqual(r.take(), ["call refreshNeighbours"], "changes that came meanwhile are fetched once more")
        r.feed(.reply(.neighbours(next: nil, previous: nil)))
        XCTAssertEqual(r.take(), [])
    }

    func testVolumeGoesToTheHouseOrToThisComputer() {
        var r = Rig()
        r.feed(.command(.setVolume(0.3)))
        XCTAssertEqual(r.take(), ["call setVolume(30)"])
        var c = Rig.config
        c.volume = .local
        r.feed(.reload(c))
        XCTAssertEqual(r.take(), ["Volume=1.0"], "this computer's volume is shown")
        r.feed(.command(.setVolume(0.3)))
        XCTAssertEqual(r.take(), ["stream volume(0.3)", "Volume=0.3"])
    }

    /// Issue #23 (5): a muted house reads as Volume 0 (as mopidy-mpris has it); a level above 0
    /// unmutes it; the mute is followed from the events and from a fetch.
    func testAMutedHouseShowsVolumeZeroAndALevelAboveUnmutesIt() {
        var r = Rig()
        r.feed(.event(.muteChanged(true)))
        XCTAssertEqual(r.take(), ["Volume=0.0"])
        r.feed(.command(.setVolume(0)))
        XCTAssertEqual(r.take(), ["call setVolume(0)"], "0 keeps it muted")
        r.feed(.reply(.done(.setVolume(0))))
        r.feed(.command(.setVolume(0.4)))
        XCTAssertEqual(r.take(), ["call setMute(false)", "call setVolume(40)"])
        r.feed(.event(.volumeChanged(40)))
        XCTAssertEqual(r.take(), ["call refreshMixer"], "still muted until Mopidy says otherwise")
        r.feed(.event(.muteChanged(false)))
        XCTAssertEqual(r.take(), ["Volume=0.4"])
        r.feed(.reply(.mixer(volume: 40, muted: true)))
        XCTAssertEqual(r.take(), ["call refreshMixer"], "a reading older than the mute event counts not; the mixer is read again")
        r.feed(.reply(.mixer(volume: 40, muted: false)))
        XCTAssertEqual(r.take(), [])
        XCTAssertEqual(r.state.published.volume, 0.4)
        var s = Snapshot(rpcURL: "http://127.0.0.1:1/mopidy/rpc", current: Self.one, state: .playing, positionMs: 5000, volume: 40)
        s.muted = true
        r.feed(.eventsDisconnected(reason: FailureReason("gone")))
        r.feed(.eventsConnected(url: Rig.ws))
        r.sync(s)
        XCTAssertEqual(r.state.published.volume, 0, "a fetch finds the house muted")
    }

    /// Found by a random walk: Mopidy (3.4, software mixer) drops a mute without an event when
    /// its pipeline starts right after another start (stop, mute, play, play). It says its volume
    /// at each start: the mixer is read again then, and the mute it lost shows as lost.
    func testAMuteMopidyDropsSilentlyIsFoundAtItsNextVolumeEvent() {
        var r = Rig()
        r.feed(.event(.muteChanged(true)))
        XCTAssertEqual(r.take(), ["Volume=0.0"])
        r.feed(.event(.volumeChanged(100)))
        XCTAssertEqual(r.take(), ["call refreshMixer"])
        r.feed(.reply(.mixer(volume: 100, muted: false)))
        XCTAssertEqual(r.take(), ["Volume=1.0"])
    }

    /// A volume wheel turned on a muted house: one unmute at a time, like the levels.
    func testAVolumeWheelOnAMutedHouseUnmutesOnceAtATime() {
        var r = Rig()
        r.feed(.event(.muteChanged(true)))
        _ = r.take()
        for v in [0.5, 0.6, 0.7] { r.feed(.command(.setVolume(v))) }
        XCTAssertEqual(r.take(), ["call setMute(false)", "call setVolume(50)"])
        r.feed(.reply(.done(.setMute(false))))
        r.feed(.reply(.done(.setVolume(50))))
        XCTAssertEqual(r.take(), ["call setMute(false)", "call setVolume(70)"], "the newest of each, once")
    }

    func testCoverArtAndNotificationOnlyForTheCurrentTrack() {
        var c = Rig.config
        c.notify = true
        var r = Rig(config: c, listening: false)
        r.feed(.artReady(trackURI: Self.two.track.uri, file: "file:///two.jpg"))
        XCTAssertEqual(r.take(), [], "art for a track no longer current")
        r.feed(.artReady(trackURI: Self.one.track.uri, file: "file:///one-large.jpg"))
        XCTAssertEqual(r.take(), ["notify One", "Metadata=One"])
        XCTAssertEqual(r.state.published.metadata.artURL, "file:///one-large.jpg")
    }

    // MARK: - Position and Seeked as consumers model them (issue #15)

    func testPreviousRestartingTheTrackIsSignalledAsSeeked() {
        var r = Rig()
        r.advance(toMs: 20_000)  // 10 s into One (5 s at the resync, less the 1.4 s heard delay)
        r.feed(.command(.previous))
        XCTAssertEqual(r.take(), ["call previous"])
        r.feed(.event(.trackPlaybackEnded(Self.one, positionMs: 15_000)))
        r.feed(.event(.trackPlaybackStarted(Self.one)))
        XCTAssertEqual(r.take(), ["call refreshNeighbours", "position 0 ms", "Seeked 0 ms"],
                       "Previous pressed here: published at once, with Seeked")
        r.advance(toMs: 30_000)
        r.feed(.event(.trackPlaybackStarted(Self.one)))  // the same again, from another client
        XCTAssertEqual(r.take(), [], "held until heard")
        r.advance(toMs: 31_400)
        XCTAssertEqual(r.take(), ["position 0 ms", "Seeked 0 ms"], "(the neighbours are still being fetched)")
    }

    /// Issue #23 (4): Previous restarting the track soon after Next is a jump of less than a
    /// second: announced all the same, since the user asked for it.
    func testPreviousRestartingTheTrackSoonAfterNextIsSignalledAsSeeked() {
        var r = Rig()
        r.feed(.command(.next))
        r.feed(.event(.trackPlaybackStarted(Self.two)))
        r.advance(toMs: 10_400)
        r.feed(.command(.previous))
        r.feed(.event(.trackPlaybackEnded(Self.two, positionMs: 400)))
        r.feed(.event(.trackPlaybackStarted(Self.two)))
        XCTAssertEqual(r.take().filter { !$0.hasPrefix("call") && !$0.hasPrefix("art") },
                       ["Metadata=Two", "position 0 ms", "Seeked 0 ms"])
    }

    /// The same restart while the stream is still on its way (Play, then Next and Previous at
    /// once): the shown position starts again at 0 too, announced.
    func testPreviousRestartingTheTrackWhileTheStreamConnectsIsSignalledAsSeeked() {
        var r = Rig(listening: false)
        r.feed(.command(.play))
        r.feed(.streamStatus(.connecting, sequence: 1))
        r.feed(.command(.next))
        r.feed(.event(.trackPlaybackStarted(Self.two)))
        r.advance(toMs: 10_500)
        _ = r.take()
        r.feed(.command(.previous))
        r.feed(.event(.trackPlaybackStarted(Self.two)))
        XCTAssertEqual(r.take().filter { !$0.hasPrefix("call") && !$0.hasPrefix("art") }, ["position 0 ms", "Seeked 0 ms"])
    }

    func testANewTrackIsNeverASeek() {
        var r = Rig(listening: false)
        r.advance(toMs: 20_000)
        r.feed(.event(.trackPlaybackStarted(Self.two)))
        XCTAssertFalse(r.take().contains { $0.hasPrefix("Seeked") })
    }

    func testSmallDriftIsNotASeekButASeekedEventIs() {
        var r = Rig()  // listening: 5000 at the resync, heard 1.4 s later
        var s = Snapshot(rpcURL: "u", current: Self.one, state: .playing, positionMs: 5300, volume: 50)
        s.repeatOn = true
        r.feed(.eventsConnected(url: Rig.ws))
        r.sync(s)
        XCTAssertFalse(r.take().contains { $0.hasPrefix("Seeked") }, "a 0.3 s correction is drift")
        s.positionMs = 9000
        r.feed(.eventsConnected(url: Rig.ws))
        r.sync(s)
        XCTAssertTrue(r.take().contains("Seeked 7600 ms"), "a 3.7 s correction is a jump (heard 1.4 s later)")
        r.feed(.event(.seeked(positionMs: 9500)))
        r.advance(toMs: r.nowMs + 1400)
        XCTAssertEqual(r.take(), ["position 9500 ms", "Seeked 9500 ms"], "when heard")
        r.nowMs += 100
        r.feed(.event(.seeked(positionMs: 9900)))
        r.advance(toMs: r.nowMs + 1400)
        XCTAssertEqual(r.take(), ["position 9900 ms", "Seeked 9900 ms"], "a small seek is a seek too")
    }

    func testWhileNotListeningTheShownPositionStaysAndNothingIsSignalled() {
        var r = Rig()
        r.advance(toMs: 12_000)  // heard: 3600 + 2000
        r.feed(.command(.pause))
        r.feed(.streamStatus(.paused, sequence: 2))
        _ = r.take()
        // Another client seeks the house, Mopidy reconnects: the house moves, what is shown stays.
        r.feed(.event(.seeked(positionMs: 20_000)))
        var s = Snapshot(rpcURL: "u", current: Self.one, state: .playing, positionMs: 25_000, volume: 50)
        s.repeatOn = true
        r.feed(.eventsConnected(url: Rig.ws))
        r.sync(s)
        XCTAssertFalse(r.take().contains { $0.hasPrefix("Seeked") })
        XCTAssertEqual(r.state.published.position(nowUs: 30_000_000), 5_600_000, "where you paused")
    }

    func testPauseWithControlServerIsNoSeek() {
        var c = Rig.config
        c.control = .server
        var r = Rig(config: c)
        r.advance(toMs: 12_000)
        r.feed(.command(.pause))
        r.feed(.streamStatus(.paused, sequence: 2))
        r.feed(.event(.trackPlaybackPaused(Self.one, positionMs: 7000)))  // the house, 1.4 s ahead
        XCTAssertFalse(r.take().contains { $0.hasPrefix("Seeked") }, "a plain Pause sent Seeked")
        XCTAssertEqual(r.state.published.position(nowUs: 13_000_000), 5_600_000)
    }

    func testStopIsStoppedAtZeroWithTheTrackShownAndPlayJoinsAgain() {
        var r = Rig()
        r.advance(toMs: 15_000)
        r.feed(.command(.stop))
        XCTAssertEqual(r.take(), ["stream stop", "PlaybackStatus=Stopped"])
        XCTAssertEqual(r.state.published.position(nowUs: 16_000_000), 0)
        XCTAssertEqual(r.title, "One", "Metadata kept")
        r.feed(.streamStatus(.stopped, sequence: 2))
        XCTAssertEqual(r.state.published.playbackStatus, .stopped)
        XCTAssertFalse(r.take().contains { $0.hasPrefix("Seeked") || $0.hasPrefix("PlaybackStatus") })
        r.feed(.command(.play))
        XCTAssertEqual(r.take(), ["stream play"], "Stopped until the stream is on its way")
        r.feed(.streamStatus(.connecting, sequence: 3))
        XCTAssertEqual(r.take(), ["PlaybackStatus=Playing"])
        XCTAssertEqual(r.state.published.position(nowUs: 17_000_000), 2_000_000,
                       "Playing: on from 0, as consumers extrapolate it, until the music is heard")
        XCTAssertEqual(r.state.server.state, .playing, "the house never stopped")
        r.advance(toMs: 17_000)
        r.feed(.streamStatus(.playing, sequence: 4))
        XCTAssertEqual(r.take(), ["position 10600 ms", "Seeked 10600 ms"], "joined at the live edge, heard 1.4 s late")
    }

    func testStopWithControlServerStopsTheHouseToo() {
        var c = Rig.config
        c.control = .server
        var r = Rig(config: c)
        r.feed(.command(.stop))
        XCTAssertEqual(r.take(), ["stream stop", "call stop", "PlaybackStatus=Stopped"])
    }

    func testPositionIsFrozenWhileNotHeardAndJumpsWithSeekedWhenHeardAgain() {
        var r = Rig()
        r.advance(toMs: 12_000)  // heard position: 5000 − 1400 + 2000 = 5600 ms
        r.feed(.command(.pause))
        r.feed(.streamStatus(.paused, sequence: 2))
        XCTAssertEqual(r.take(), ["stream pause", "PlaybackStatus=Paused"])
        XCTAssertEqual(r.state.published.position(nowUs: 20_000_000), 5_600_000, "frozen where listening stopped")
        r.advance(toMs: 20_000)
        r.feed(.command(.play))
        r.feed(.streamStatus(.connecting, sequence: 3))
        r.feed(.streamStatus(.buffering, sequence: 4))
        XCTAssertEqual(r.take(), ["stream play", "PlaybackStatus=Playing"], "nothing heard yet: no jump")
        r.advance(toMs: 20_800)
        r.feed(.streamStatus(.playing, sequence: 5))
        // The house ran on from 7000 ms (what was heard at 12 s, plus the 1.4 s it trailed):
        // 7000 + 8800 = 15 800 ms, heard 1.4 s later than it plays.
        XCTAssertEqual(r.take(), ["position 14400 ms", "Seeked 14400 ms"])
        r.advance(toMs: 21_800)
        XCTAssertEqual(r.state.published.position(nowUs: 21_800_000), 15_400_000)
    }

    func testReconnectingKeepsThePositionRunning() {
        var r = Rig()
        r.advance(toMs: 12_000)
        r.feed(.streamStatus(.reconnecting(inMs: 500, reason: "x"), sequence: 2))
        r.feed(.streamStatus(.connecting, sequence: 3))
        r.feed(.streamStatus(.playing, sequence: 4))
        XCTAssertFalse(r.take().contains { $0.hasPrefix("Seeked") }, "a reconnect within listening is no jump")
        XCTAssertEqual(r.state.published.position(nowUs: 13_000_000), 6_600_000)
    }

    // MARK: - Floods (issue #14)

    func testAVolumeWheelSendsOneCallAtATimeAndTheNewestLast() {
        var r = Rig()
        for v in stride(from: 0.10, through: 0.50, by: 0.01) { r.feed(.command(.setVolume(v))) }
        XCTAssertEqual(r.take(), ["call setVolume(10)"])
        r.feed(.reply(.done(.setVolume(10))))
        XCTAssertEqual(r.take(), ["call setVolume(50)"], "only the newest of those that waited")
        r.feed(.reply(.failed(.setVolume(50), reason: FailureReason("timeout"))))
        r.feed(.command(.setVolume(0.6)))
        XCTAssertEqual(r.take(), ["log volume: timeout", "call setVolume(60)"])
    }

    func testCommandsBeyondWhatMopidyHasUnansweredAreDropped() {
        var r = Rig()
        for _ in 0..<40 { r.feed(.command(.next)) }
        let t = r.take()
        XCTAssertEqual(t.filter { $0 == "call next" }.count, BridgeTuning.maxCommandsInFlight)
        // 24 dropped, said on the 1st, 2nd, 4th, 8th and 16th.
        XCTAssertEqual(t.filter { $0.contains("dropped") }, ["log next: Mopidy has 16 commands unanswered; dropped"]
            + [2, 4, 8, 16].map { "log next: Mopidy has 16 commands unanswered; dropped (\($0) in a row)" })
        r.feed(.reply(.done(.next)))
        r.feed(.command(.next))
        XCTAssertEqual(r.take(), ["call next"], "room again once Mopidy answers")
    }

    // MARK: - From the review: stale answers, bursts during a fetch, a seek into a change

    func testAStaleOrOrphanedResyncAnswerIsDropped() {
        var r = Rig(listening: false)
        r.feed(.eventsConnected(url: Rig.ws))
        let first = r.state.resyncGeneration
        r.feed(.eventsConnected(url: Rig.ws))  // reconnected before the first answer came
        var old = Snapshot(rpcURL: "u", current: Self.two, state: .playing, positionMs: 0, volume: 50)
        old.generation = first
        r.feed(.reply(.synced(old)))
        XCTAssertEqual(r.title, "One", "an older fetch's answer was applied")
        r.feed(.eventsDisconnected(reason: FailureReason("gone")))
        var late = old
        late.generation = r.state.resyncGeneration
        r.feed(.reply(.synced(late)))
        XCTAssertFalse(r.state.server.synced, "an answer after the socket dropped showed the server as connected")
    }

    func testABurstDuringAFetchIsFetchedAgainNotKept() {
        var r = Rig(listening: false)
        r.feed(.eventsConnected(url: Rig.ws))
        for _ in 0..<(BridgeTuning.maxDeferredEvents + 10) { r.feed(.event(.volumeChanged(40))) }
        XCTAssertLessThanOrEqual(r.state.deferred.count, BridgeTuning.maxDeferredEvents)
        _ = r.take()
        var s = Snapshot(rpcURL: "u", current: Self.one, state: .playing, positionMs: 0, volume: 50)
        s.repeatOn = true
        r.sync(s)
        XCTAssertTrue(r.take().contains("call resync"), "the fetch that missed a burst is not fetched again")
    }

    func testASeekWhileTheNextTrackIsHeldBackIsIgnored() {
        var r = Rig()
        r.feed(.event(.trackPlaybackStarted(Self.two)))  // held: One is still heard
        r.feed(.command(.setPosition(us: 20_000_000)))
        XCTAssertEqual(r.take(), [], "no call to Mopidy (the log line is at info)")
        r.advance(toMs: 11_400)
        r.feed(.command(.setPosition(us: 20_000_000)))
        XCTAssertEqual(r.take().last, "call seek(ms: 20000)")
    }

    func testLeavingLocalVolumeRestoresFullGain() {
        var c = Rig.config
        c.volume = .local
        var r = Rig(config: c)
        r.feed(.command(.setVolume(0.3)))
        _ = r.take()
        c.volume = .server
        r.feed(.reload(c))
        XCTAssertEqual(r.take(), ["stream volume(1.0)", "Volume=0.5"], "the gain stays at 0.3 under Mopidy's volume")
    }
}
