import Audio
import Foundation
import Support
import XCTest

/// The way back towards live (#24): a Wi-Fi-like stall (the link holds the stream, then releases it
/// as a burst) leaves the player behind by what its underrun lost: the audio waits in its input.
/// Once the link is clean, that backlog is dropped where nothing is cut out of the music: in
/// digital silence, here the silence of a pause on the server. The player plays the rig's tones through a link of
/// the rig's own; what is heard comes from the null sink's monitor. Asserted: nothing is dropped
/// on a clean link, nor in the music with the backlog there; audio is dropped in the server's
/// silence (`CushionPolicy`: a drop is only ever in silence) and the music goes on. Figures are
/// printed (the relay's burst of silence adds a backlog of its own, part of which stays).
final class CushionTests: StreamAudioTestCase {
    func testAfterStallsTheBacklogIsDroppedInTheServersSilenceNotInTheMusic() throws {
        let name = "cushion"
        let link = try XCTUnwrap(rig.command(["cmd": "link", "name": name, "plan": [String: Any]()]) as? [String: Any])
        let p = player(try XCTUnwrap(link["stream_url"] as? String))
        p.play()
        XCTAssertNotNil(recorder.waitForTone(try expectedTone(), candidates: tones, timeout: 8), "no tone")
        XCTAssertTrue(waitUntil(5) { p.currentFigures.localDelayMs > 0 }, "no heard delay")
        let clean = p.currentFigures

        // Stalls of 1500 ms every 7.5 s for 31 s, then a clean link: what the underruns lost waits
        // in the input (none on the clean link), and the tones play on (no digital silence to drop).
        try rig.command(["cmd": "link", "name": name, "plan": ["stall_ms": 1500, "every_s": 7.5]])
        let stallsFrom = monotonicUs()
        XCTAssertTrue(waitUntil(40) { monotonicUs() - stallsFrom > 31_000_000 })
        try rig.command(["cmd": "link", "name": name, "plan": [String: Any]()])
        var stalled = p.currentFigures
        XCTAssertTrue(waitUntil(5) { stalled = p.currentFigures; return stalled.inputBacklogMs > 200 },
                      "the stalls left no backlog: \(stalled.inputBacklogMs) ms")
        XCTAssertEqual(stalled.droppedForLiveMs, 0, "dropped in the middle of the music")
        XCTAssertNotNil(recorder.waitForTone(try expectedTone(), candidates: tones, timeout: 5), "no tone after the stalls")

        // The server pauses for 3 s. The rig's relay sends the silence of a pause partly as it comes,
        // partly when Mopidy plays again, at once (a burst): its silence takes the backlog.
        try rig.rpc("core.playback.pause")
        var resumed = false
        defer { if !resumed { _ = try? rig.rpc("core.playback.resume") } }
        let pausedAt = monotonicUs()
        XCTAssertTrue(waitUntil(5) { monotonicUs() - pausedAt > 3_000_000 })  // the pause's length (a window, not an event)
        try rig.rpc("core.playback.resume")
        resumed = true
        XCTAssertTrue(waitUntil(10) { p.currentFigures.droppedForLiveMs > 0 }, "nothing dropped in the server's silence")
        XCTAssertNotNil(recorder.waitForTone(try expectedTone(), candidates: tones, timeout: 8), "no tone after the server's pause")
        usleep(2_000_000)  // the figures after the drop (a window, not an event)
        let after = p.currentFigures
        print("input backlog \(clean.inputBacklogMs) ms clean, \(stalled.inputBacklogMs) after the stalls, "
              + "\(after.inputBacklogMs) after the server's pause; dropped \(after.droppedForLiveMs) ms in \(after.dropsForLive) "
              + "run(s); heard delay \(clean.localDelayMs) ms clean, \(stalled.localDelayMs) after the stalls, "
              + "\(after.localDelayMs) after the pause")
    }
}
