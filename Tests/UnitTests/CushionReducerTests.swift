import Audio
@testable import Bridge
import XCTest

/// Heard-now and the cushion (#24 item 2): a drop towards live makes the stream's delay fall at
/// once, and what is held for that delay is due sooner by as much, at once (the stream says so:
/// `.streamDelayFell`), not at the bridge's next input or deadline.
final class CushionReducerTests: XCTestCase {
    typealias Rig = ReducerTests.Rig

    /// Two starts on the server at 10 000 while the stream is `delayMs` behind: held, due then
    /// with 400 ms of server (on time at 10 400).
    func twoHeld(delayMs: Int) -> Rig {
        var r = Rig()
        r.streamDelayMs = delayMs
        r.feed(.event(.trackPlaybackStarted(ReducerTests.two)))
        XCTAssertEqual(r.state.nextDeadlineMs, 10_400 + delayMs, "held for the stream's delay + 400 ms of server")
        return r
    }

    /// A stall's backlog holds the stream 2 s behind; Two starts on the server (heard 2.4 s on).
    /// 1.1 s later the output drops 1 s of silence: Two is then heard at 11 400, already past at
    /// 11 500, when the stream tells the drop: it is shown at once.
    func testAHeldChangeIsShownAtOnceWhenADropMakesItDue() {
        var r = twoHeld(delayMs: 2000)
        r.advance(toMs: 11_100)
        XCTAssertEqual(r.title, "One")
        r.streamDelayMs = 1000
        r.advance(toMs: 11_500)
        XCTAssertEqual(r.title, "One", "no input since the drop: nothing looked at the new measure")
        r.feed(.streamDelayFell(fromMs: 2000, toMs: 1000))
        XCTAssertEqual(r.title, "Two", "due at 11 400 after the drop, shown as the drop is told")
        let trace = r.take()
        XCTAssertEqual(trace.filter { $0.hasPrefix("Metadata") }.count, 1, trace.joined(separator: "\n"))
    }

    /// A drop that leaves the change still ahead moves its deadline forward by the drop: the
    /// runner wakes then, not at the old time.
    func testADropMovesTheDeadlineOfWhatIsStillAhead() {
        var r = Rig()
        r.streamDelayMs = 3000
        r.feed(.event(.trackPlaybackStarted(ReducerTests.two)))
        r.feed(.event(.trackPlaybackStarted(ReducerTests.three)))
        XCTAssertEqual(r.state.nextDeadlineMs, 13_400)
        r.advance(toMs: 10_500)
        r.streamDelayMs = 2200
        r.feed(.streamDelayFell(fromMs: 3000, toMs: 2200))
        XCTAssertEqual(r.state.nextDeadlineMs, 12_600, "800 ms sooner")
        XCTAssertEqual(r.title, "One")
        r.advance(toMs: 12_599)
        XCTAssertEqual(r.title, "One", "never before the music: the drop took 800 ms, not more")
        r.advance(toMs: 12_600)
        XCTAssertEqual(r.title, "Three", "both held changes are due at the drop's new delay")
    }

    /// With nothing held the input changes nothing and says nothing.
    func testADropWithNothingHeldChangesNothing() {
        var r = Rig()
        let before = r.state.published
        r.streamDelayMs = 600
        r.feed(.streamDelayFell(fromMs: 1000, toMs: 600))
        XCTAssertEqual(r.state.published, before)
        XCTAssertEqual(r.take(), [])
    }

    /// Silence written before a change and the audio around it muted (`Playout.Pad`): its new
    /// track is heard 150 ms after the change's on-time moment, so its start, held, is shown
    /// 150 ms later, through a later measure too, and the start after it not before it. The
    /// start is the one the stream was told of at that moment (10 400: 400 ms of server after
    /// it came): told of another moment, or told again, nothing moves.
    func testAStartHeardLaterForAPadIsShownThatMuchLater() {
        var r = twoHeld(delayMs: 2000)
        r.advance(toMs: 10_100)
        r.feed(.event(.trackPlaybackStarted(ReducerTests.three)))
        r.feed(.streamChangeHeardLater(onTimeMs: 10_420, laterMs: 150))
        XCTAssertEqual(r.state.nextDeadlineMs, 12_400, "no start the stream was told of at 10 420")
        r.feed(.streamChangeHeardLater(onTimeMs: 10_400, laterMs: 150))
        XCTAssertEqual(r.state.nextDeadlineMs, 12_550, "Two's start 150 ms later")
        r.feed(.streamChangeHeardLater(onTimeMs: 10_400, laterMs: 150))
        XCTAssertEqual(r.state.nextDeadlineMs, 12_550, "told again: no further")
        r.streamDelayMs = 2100
        r.feed(.event(.volumeChanged(40)))
        XCTAssertEqual(r.state.nextDeadlineMs, 12_650, "timed again by the measure, still 150 ms later")
        r.advance(toMs: 12_649)
        XCTAssertEqual(r.title, "One")
        r.advance(toMs: 12_650)
        XCTAssertEqual(r.title, "Three", "Three, due at 12 600 by the measure, comes with Two, not before it")
        XCTAssertEqual(r.take().filter { $0.hasPrefix("Metadata") }, ["Metadata=Three"], "both due at once: one signal")
    }

    /// Where a start is heard from 150 ms into its track (the muted window after a pad, or the
    /// first moments cut with the old track's end), its Position starts there, not at 0.
    func testAStartHeardLaterIsShownFromThatFarIntoItsTrack() {
        var r = twoHeld(delayMs: 2000)
        r.feed(.streamChangeHeardLater(onTimeMs: 10_400, laterMs: 150))
        r.advance(toMs: 12_549)
        XCTAssertEqual(r.title, "One")
        r.advance(toMs: 12_550)
        XCTAssertEqual(r.title, "Two")
        XCTAssertEqual(r.state.published.position(nowUs: 12_550_000), 150_000, "heard from 150 ms into Two")
        XCTAssertEqual(r.state.published.position(nowUs: 13_550_000), 1_150_000)
        XCTAssertFalse(r.take().contains { $0.hasPrefix("Seeked") }, "a new track: no Seeked")
    }
}

