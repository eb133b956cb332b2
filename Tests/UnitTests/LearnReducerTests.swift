import Audio
@testable import Bridge
import Mopidy
import XCTest

/// The server's delay learned from the music: what the reducer asks the stream to look for, and
/// how the answers move the delay track changes are held for. The rig: the stream 1 s behind,
/// `server_delay_ms` 400.
final class LearnReducerTests: XCTestCase {
    typealias Rig = ReducerTests.Rig

    /// Track `tl` starts on the server now; the stream looks for it and answers `offsetMs`.
    func change(_ r: inout Rig, to tl: TlTrack, answer offsetMs: Int?) -> BoundaryRequest? {
        r.learning = true
        var asked: BoundaryRequest? = nil
        for e in r.state.reduce(.event(.trackPlaybackStarted(tl)), at: r.moment) {
            if case .stream(.findBoundary(let q)) = e { asked = q }
        }
        r.advance(toMs: r.nowMs + 4000)
        if let asked { r.feed(.boundaryHeard(BoundaryHeard(request: asked, offsetMs: offsetMs))) }
        r.advance(toMs: r.nowMs + 4000)
        return asked
    }

    func testEachTrackChangeIsLookedForWhereItShouldBeHeard() {
        var r = Rig()
        r.learning = true
        r.feed(.event(.trackPlaybackStarted(ReducerTests.two)))
        XCTAssertEqual(r.take(), ["a change at 10400 ms", "look for the change of 10000 ms, 400 ms on"])
        XCTAssertEqual(r.state.learner.lookedAt, 0)
    }

    /// While the stream connects nothing is decoded to look in.
    func testNothingIsLookedForWhileTheStreamConnects() {
        var r = Rig()
        r.learning = true
        r.feed(.streamStatus(.buffering, sequence: 2))
        r.feed(.event(.trackPlaybackStarted(ReducerTests.two)))
        XCTAssertGreaterThan(r.state.heardDelayMs(r.moment), 0, "held all the same")
        XCTAssertFalse(r.take().contains { $0.hasPrefix("look for") })
        r.feed(.streamStatus(.playing, sequence: 3))
        r.feed(.event(.trackPlaybackStarted(ReducerTests.three)))
        XCTAssertTrue(r.take().contains { $0.hasPrefix("look for") }, "not looked for while playing")
    }

    func testClearBoundariesMoveTheDelayAndAmbiguousOnesDoNot() {
        var r = Rig()
        let tracks = [ReducerTests.two, ReducerTests.three, ReducerTests.one]
        // A server 800 ms slower than server_delay_ms says: the first answer moves it all.
        let first = change(&r, to: tracks[0], answer: 800)
        XCTAssertEqual(first?.windowMs, 2500, "the first look reaches farther")
        XCTAssertEqual(first?.serverDelayMs, 400)
        XCTAssertEqual(r.state.learner.estimateMs, 1200)
        XCTAssertEqual(r.state.heardDelayMs(r.moment), 2200)
        // The next change is expected where it is, looked for more narrowly, and held that long.
        let second = change(&r, to: tracks[1], answer: 10)
        XCTAssertEqual(second?.windowMs, 1500)
        XCTAssertEqual(second?.serverDelayMs, 1200)
        XCTAssertEqual(r.state.learner.estimateMs, 1205, "the median of 1200 and 1210")
        for i in 0..<30 { _ = change(&r, to: tracks[i % 3], answer: nil) }
        XCTAssertEqual(r.state.learner.estimateMs, 1205, "30 changes without a clear boundary moved it")
        XCTAssertEqual(r.state.learner.boundaries, 2)
        XCTAssertEqual(r.state.learner.lookedAt, 32)
        r.feed(.event(.trackPlaybackStarted(ReducerTests.two)))
        let at = r.nowMs
        r.advance(toMs: at + 1000 + 1205 - 1)
        XCTAssertEqual(r.title, "One")
        r.advance(toMs: at + 1000 + 1205)
        XCTAssertEqual(r.title, "Two", "held for the stream's delay and the learned one")
    }

    func testWithLearningOffTheConfiguredDelayStays() {
        var c = Rig.config
        c.heardSyncLearn = false
        var r = Rig(config: c)
        XCTAssertNil(change(&r, to: ReducerTests.two, answer: nil), "looked for with learning off")
        r.feed(.boundaryHeard(BoundaryHeard(request: BoundaryRequest(changedAtMs: 1, serverDelayMs: 400, windowMs: 1500),
                                            offsetMs: 900)))
        XCTAssertEqual(r.state.serverDelayMs, 400)
        XCTAssertEqual(r.state.heardDelayMs(r.moment), 1400)
    }

    /// The cushion's way back towards live and its growth at track changes need to know where
    /// the changes are, whether the server's delay is learned or fixed; a start whose new track
    /// is heard later (muted at a grown cushion) is shown that much later either way.
    func testWithLearningOffTheStreamStillKnowsWhereChangesAre() {
        var c = Rig.config
        c.heardSyncLearn = false
        var r = Rig(config: c)
        r.learning = true
        r.feed(.event(.trackPlaybackStarted(ReducerTests.two)))
        XCTAssertEqual(r.take(), ["a change at 10400 ms"], "told the change, not asked to look for it")
        r.feed(.streamChangeHeardLater(onTimeMs: 10_400, laterMs: 300))
        r.advance(toMs: 10_000 + 1400 + 299)
        XCTAssertEqual(r.title, "One", "shown before its new track is heard")
        r.advance(toMs: 10_000 + 1400 + 300)
        XCTAssertEqual(r.title, "Two")
    }

    /// The decoder keeps what it needs to find boundaries only while the delay is learned: set
    /// when the bridge starts, and again by a reload that turns learning on or off.
    func testTheStreamWatchesForBoundariesOnlyWhileLearning() {
        var r = Rig(listening: false)
        r.feed(.started)
        XCTAssertEqual(r.take(), ["stream watchBoundaries(true)"], "no autoplay: nothing plays by itself")
        var c = Rig.config
        c.heardSyncLearn = false
        r.feed(.reload(c))
        XCTAssertEqual(r.take().filter { $0.contains("watch") }, ["stream watchBoundaries(false)"])
        r.feed(.reload(c))
        XCTAssertEqual(r.take().filter { $0.contains("watch") }, [], "told again without a change")
        c.heardSyncLearn = true
        c.autoplay = true
        var started = Rig(config: c, listening: false)
        started.feed(.started)
        XCTAssertEqual(started.take(), ["stream watchBoundaries(true)", "stream play"], "autoplay plays at the start")
        c.streamURL = nil
        var silent = Rig(config: c, listening: false)
        silent.feed(.started)
        XCTAssertEqual(silent.take(), [], "without a stream there is nothing to tell")
    }

    func testAReloadWithAnotherServerDelayStartsAgainFromIt() {
        var r = Rig()
        _ = change(&r, to: ReducerTests.two, answer: 600)
        XCTAssertEqual(r.state.serverDelayMs, 1000)
        var c = Rig.config
        c.serverDelayMs = 300
        r.feed(.reload(c))
        XCTAssertEqual(r.state.serverDelayMs, 300)
        let asked = change(&r, to: ReducerTests.three, answer: 100)
        XCTAssertEqual(asked?.serverDelayMs, 300)
        XCTAssertEqual(r.state.serverDelayMs, 400)
        // An answer to a look made before the reload says nothing of the new start.
        c.serverDelayMs = 350
        r.feed(.reload(c))
        r.feed(.boundaryHeard(BoundaryHeard(request: asked!, offsetMs: 700)))
        XCTAssertEqual(r.state.serverDelayMs, 350)
    }

    func testTheCombinerIsAMedianWithABoundedStep() {
        var l = ServerDelayLearner(startMs: 400)
        XCTAssertEqual(l.heard(sampleMs: 2900, atMs: 1), 1000, "one step is at most a second")
        XCTAssertEqual(l.estimateMs, 1400)
        XCTAssertEqual(l.heard(sampleMs: 1900, atMs: 2), 1000)
        XCTAssertEqual(l.estimateMs, 2400, "the median of 2900 and 1900")
        l.heard(sampleMs: 1900, atMs: 3)
        XCTAssertEqual(l.estimateMs, 1900, "the wrong first one is outvoted")
        l.heard(sampleMs: 1910, atMs: 4)
        l.heard(sampleMs: 1890, atMs: 5)
        XCTAssertEqual(l.heard(sampleMs: 400, atMs: 6), 0, "one wrong among right ones moves nothing")
        XCTAssertEqual(l.estimateMs, 1900)
        XCTAssertEqual(l.changedAtMs, 5)
        XCTAssertEqual(l.heard(sampleMs: -5, atMs: 7), 0, "an impossible delay is no sample")
        XCTAssertEqual(l.heard(sampleMs: nil, atMs: 8), 0)
        XCTAssertEqual(l.boundaries, 6)
        XCTAssertEqual(l.lookedAt, 8)
    }
}
