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

    /// The playout's side: each frame is silenced by where it is in the stream.
    func testAFramesSilenceFollowsTheHouseByItsOnTimeMoment() {
        var d = Playout.Delay()
        XCTAssertNil(d.onTime(at: .start))
        d.decoded(samples: 4410, rate: 44_100, arrival: Instant(ms: 1000))  // 100 ms, on time at 900 + its end
        XCTAssertEqual(d.onTime(at: StreamPosition(ms: 100)), Instant(ms: 1000))
        /// Two frames of 100 ms, on time at 900 and 1000: whether each is silenced.
        func muted(_ house: HouseSilence) -> [Bool] {
            var p = Playout(keepMs: 0, learned: Playout.Target(), joining: Instant(ms: 0))
            let format = AudioFormat(sampleRate: 44_100, channels: 2, bitsPerSample: 16)
            return [1000, 1100].map { at in
                p.decide(samples: 4410, format: format, arrival: Instant(ms: at), house: house, at: Instant(ms: at)) { false }.houseMuted
            }
        }
        XCTAssertEqual(muted(.none), [false, false])
        XCTAssertEqual(muted(.until(onTimeMs: 1000)), [true, false], "at 900: before the resume; at 1000: the resume")
        XCTAssertEqual(muted(.untilTold), [true, true])
    }

    func testWhatIsSilencedByWhereItIsInTheStream() {
        XCTAssertFalse(HouseSilence.none.silences(onTimeMs: nil))
        XCTAssertTrue(HouseSilence.untilTold.silences(onTimeMs: 5000))
        XCTAssertTrue(HouseSilence.until(onTimeMs: 5000).silences(onTimeMs: 4999))
        XCTAssertFalse(HouseSilence.until(onTimeMs: 5000).silences(onTimeMs: 5000))
        XCTAssertTrue(HouseSilence.until(onTimeMs: 5000).silences(onTimeMs: nil), "not placed yet: silent")
    }
}
