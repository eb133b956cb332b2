@testable import Audio
@testable import Bridge
import Mopidy
import Net
import XCTest

/// The house's pause or stop, once shown, silences what the stream decodes until where the
/// house's resume is in the stream (issue #23: a stall right after the house stopped brought the
/// music from before the stop after Stopped was shown, and it played under it).
final class HouseSilenceTests: XCTestCase {
    typealias Rig = ReducerTests.Rig

    func testAShownPauseSilencesTheStreamUntilTheResumeIsInIt() {
        var r = Rig()
        r.silences = true
        r.feed(.event(.trackPlaybackPaused(ReducerTests.one, positionMs: 6000)))  // heard at 11 400
        r.advance(toMs: 11_399)
        XCTAssertEqual(r.take(), [], "nothing silenced before the pause is shown")
        r.advance(toMs: 11_400)
        XCTAssertEqual(r.take(), ["PlaybackStatus=Paused", "silence until told"])
        r.advance(toMs: 12_000)
        r.feed(.event(.trackPlaybackResumed(ReducerTests.one, positionMs: 6000)))  // heard at 13 400
        XCTAssertEqual(r.take(), ["silence until 12150 ms"],
                       "the resume arrives on time at 12 400 (400 ms of server delay), let through 250 ms before")
        r.advance(toMs: 13_400)
        XCTAssertEqual(r.take(), ["PlaybackStatus=Playing", "silence none"], "all of it once Playing is shown")
    }

    func testAStopAndAPlayHeldTogetherSilenceFromTheStopToThePlay() {
        var r = Rig()
        r.silences = true
        r.feed(.event(.playbackStateChanged(old: .playing, new: .stopped)))  // heard at 11 400
        r.advance(toMs: 10_500)
        r.feed(.event(.playbackStateChanged(old: .stopped, new: .playing)))  // heard at 11 900
        r.advance(toMs: 11_400)
        XCTAssertEqual(r.take(), ["PlaybackStatus=Stopped", "silence until 10650 ms"],
                       "the play is already held: silenced only until it")
        r.advance(toMs: 11_900)
        XCTAssertEqual(r.take(), ["PlaybackStatus=Playing", "silence none"])
    }

    /// With `heard_sync` off changes are shown as Mopidy sends them, before the music ends here:
    /// silencing then would cut the music before a pause.
    func testWithoutHeardSyncNothingIsSilenced() {
        var c = Rig.config
        c.heardSync = false
        var r = Rig(config: c)
        r.silences = true
        r.feed(.event(.trackPlaybackPaused(ReducerTests.one, positionMs: 6000)))
        XCTAssertEqual(r.take(), ["PlaybackStatus=Paused"])
    }

    /// Not listening here (never started, or paused with the connection kept warm): nothing is
    /// decoded to be heard under Paused, and the audio a warm pause holds keeps its level.
    func testNothingIsSilencedWhileThisComputerDoesNotListen() {
        var r = Rig(listening: false)
        r.silences = true
        r.feed(.event(.trackPlaybackPaused(ReducerTests.one, positionMs: 6000)))
        r.advance(toMs: 12_000)
        XCTAssertEqual(r.take().filter { $0.hasPrefix("silence") }, [])

        var warm = Rig()
        warm.silences = true
        warm.feed(.streamStatus(.paused, sequence: 2))
        warm.feed(.event(.trackPlaybackPaused(ReducerTests.one, positionMs: 6000)))
        warm.advance(toMs: 12_000)
        XCTAssertEqual(warm.take().filter { $0.hasPrefix("silence") }, [])
        warm.feed(.streamStatus(.playing, sequence: 3))
        XCTAssertEqual(warm.take().filter { $0.hasPrefix("silence") }, ["silence until told"],
                       "listening again while the house is paused")
    }

    /// Only the house's state as Mopidy says it counts: once Mopidy is unreachable the stream
    /// plays what it gets (a wrong events URL must not leave the music silent).
    func testMopidyUnreachableLiftsTheSilence() {
        var r = Rig()
        r.silences = true
        r.feed(.event(.trackPlaybackPaused(ReducerTests.one, positionMs: 6000)))
        r.advance(toMs: 11_400)
        XCTAssertEqual(r.take(), ["PlaybackStatus=Paused", "silence until told"])
        r.feed(.eventsDisconnected(reason: FailureReason("refused")))
        XCTAssertEqual(r.take().filter { $0.hasPrefix("silence") }, ["silence none"])
    }

    /// The output's side: each frame's level by where it is in the stream.
    func testAFramesLevelFollowsTheSilenceByItsOnTimeMoment() {
        var e = HeardDelayEstimator()
        XCTAssertNil(e.onTimeMs(atPositionMs: 0))
        e.frameDecoded(samples: 4410, sampleRate: 44_100, arrivalMs: 1000)  // 100 ms, on time at 900 + its end
        XCTAssertEqual(e.onTimeMs(atPositionMs: 100), 1000)
        let g = Gain()
        g.value = 0.5
        XCTAssertEqual(g.value(onTimeMs: e.onTimeMs(atPositionMs: 0)), 0.5)
        g.silence = .until(onTimeMs: 1000)
        XCTAssertEqual(g.value(onTimeMs: e.onTimeMs(atPositionMs: 0)), 0, "at 900: before the resume")
        XCTAssertEqual(g.value(onTimeMs: e.onTimeMs(atPositionMs: 100)), 0.5, "at 1000: the resume")
        g.silence = .untilTold
        XCTAssertEqual(g.value(onTimeMs: 5000), 0)
        g.silence = .none
        XCTAssertEqual(g.value(onTimeMs: nil), 0.5)
    }

    func testWhatIsSilencedByWhereItIsInTheStream() {
        XCTAssertFalse(HouseSilence.none.silences(onTimeMs: nil))
        XCTAssertTrue(HouseSilence.untilTold.silences(onTimeMs: 5000))
        XCTAssertTrue(HouseSilence.until(onTimeMs: 5000).silences(onTimeMs: 4999))
        XCTAssertFalse(HouseSilence.until(onTimeMs: 5000).silences(onTimeMs: 5000))
        XCTAssertTrue(HouseSilence.until(onTimeMs: 5000).silences(onTimeMs: nil), "not placed yet: silent")
    }
}
