import Audio
@testable import Bridge
import Mopidy
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

    func testWhatIsSilencedByWhereItIsInTheStream() {
        XCTAssertFalse(HouseSilence.none.silences(onTimeMs: nil))
        XCTAssertTrue(HouseSilence.untilTold.silences(onTimeMs: 5000))
        XCTAssertTrue(HouseSilence.until(onTimeMs: 5000).silences(onTimeMs: 4999))
        XCTAssertFalse(HouseSilence.until(onTimeMs: 5000).silences(onTimeMs: 5000))
        XCTAssertTrue(HouseSilence.until(onTimeMs: 5000).silences(onTimeMs: nil), "not placed yet: silent")
    }
}
