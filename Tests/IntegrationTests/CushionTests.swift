import Audio
import Foundation
import Support
import XCTest

/// The way back towards live (#24): a Wi-Fi-like stall (the link holds the stream, then releases it
/// as a burst) leaves the player behind by what its underrun lost; once the link is clean, that
/// excess is dropped where nothing is cut out of the music: in the digital silence of a track the
/// server changes to (the rig's "Late Start" repeated: 1.5 s of silence, then a 550 Hz tone). The
/// player plays through a link of the rig's own; what is heard comes from the null sink's monitor.
/// Asserted: nothing is dropped on a clean link; the stalls leave a backlog in the input (frames
/// wait there longer than the margin); at the next change the backlog is dropped (a drop is only
/// ever in silence: `CushionPolicy`) and the music goes on. Printed: how far behind the server it
/// is at each change, against a listener straight to Icecast (RawListener); the rig's server
/// jolts at each repeat of the track, which moves that figure by more than any margin.
final class CushionTests: StreamAudioTestCase {
    let lateTone = 550

    override func tearDown() {
        _ = try? rig.command(["cmd": "queue"])
        super.tearDown()
    }

    /// The music set's "Late Start" alone, repeated: every 30 s the server changes track by itself
    /// (no command that could jolt its encoder) into 1.5 s of digital silence, then a tone.
    func repeatLateStart() throws {
        try rig.command(["cmd": "queue", "set": "music"])
        let tracks = try XCTUnwrap(try rig.rpc("core.tracklist.get_tl_tracks") as? [[String: Any]])
        let uri = try XCTUnwrap(tracks.lazy.compactMap { ($0["track"] as? [String: Any])?["uri"] as? String }
            .first { $0.hasSuffix("m8-late.flac") }, "no Late Start in the music set")
        try rig.rpc("core.tracklist.clear")
        try rig.rpc("core.tracklist.add", ["uris": [uri]])
        try rig.rpc("core.tracklist.set_repeat", ["value": true])
        try rig.rpc("core.playback.play")
    }

    /// The first tone heard after `fromUs` that follows 300 ms of silence (each 10 ms under
    /// −60 dBFS; the tone's first 10 ms above −40 dBFS), waiting up to `timeout` s for it: when it
    /// was heard (monotonic µs) and how long the silence before it was heard (ms).
    func toneAfterSilence(from fromUs: Int64, timeout: Double, _ what: String) throws -> (us: Int64, silenceMs: Double) {
        let block = Recorder.rate / 100
        var found: (Int64, Double, Int)? = nil
        _ = waitUntil(timeout) {
            var i = recorder.index(atTime: fromUs)
            var silentFrom: Int? = nil
            while i + block <= recorder.count {
                let level = recorder.rms(recorder.window(i, block))
                if level < 0.001 {
                    silentFrom = silentFrom ?? i
                } else if let s = silentFrom, level > 0.01, i - s >= Recorder.rate * 3 / 10 {
                    found = (recorder.time(ofSample: i), Double(i - s) * 1000 / Double(Recorder.rate), i)
                    return recorder.count - i > Recorder.rate / 5
                } else if level > 0.01 {
                    silentFrom = nil
                }
                i += block
            }
            return false
        }
        let (us, silenceMs, at) = try XCTUnwrap(found, "\(what): no tone after silence")
        let tone = Tone.dominant(recorder.window(at + Recorder.rate / 20, Recorder.rate / 10), rate: Recorder.rate,
                                 candidates: [lateTone] + tones)
        XCTAssertEqual(tone, lateTone, "\(what): what followed the silence is not Late Start's tone")
        return (us, silenceMs)
    }

    /// How far behind the server the tone after the silence heard at `heardUs` is (a figure):
    /// against when it left Icecast, from a listener of its own (`raw`, straight to Icecast).
    /// RawListener finds the first window a tone dominates from a point in its stream: from any
    /// point in the 1.5 s of silence that is the tone's start, from a point in the tone that point
    /// itself. So the search starts from every 100 ms of the 8 s before `heardUs` (RawListener
    /// places that point by the earliest origin of all, which the server's hiccups leave seconds
    /// early), and the tone's start is the answer most of them give (within 10 ms); nil when
    /// fewer than 3 agree.
    func lagMs(_ raw: RawListener, heardUs: Int64) -> Double? {
        let answers = (0..<80).compactMap {
            raw.onTimeUs(ofTone: lateTone, candidates: [lateTone] + tones, fromUs: heardUs - Int64($0) * 100_000)
        }
        let agreeing = { (a: Int64) in answers.filter { abs($0 - a) <= 10_000 }.count }
        guard let start = answers.max(by: { agreeing($0) < agreeing($1) }), agreeing(start) >= 3 else { return nil }
        return Double(heardUs - start) / 1000
    }

    func testAfterStallsTheBacklogIsDroppedInTheSilenceOfATrackChange() throws {
        let raw = RawListener(url: rig.info.stream_url, user: rig.info.user, password: rig.info.password, ogg: true)
        defer { raw.stop() }
        let name = "cushion"
        let link = try XCTUnwrap(rig.command(["cmd": "link", "name": name, "plan": [String: Any]()]) as? [String: Any])
        let p = player(try XCTUnwrap(link["stream_url"] as? String))
        p.play()
        XCTAssertTrue(waitUntil(10) { p.currentStatus == .playing && p.currentFigures.localDelayMs > 0 }, "\(p.currentStatus)")
        try repeatLateStart()
        let queuedUs = monotonicUs()

        // A change on the clean link (not the first start, which a command made): nothing dropped.
        let clean = try toneAfterSilence(from: queuedUs + 20_000_000, timeout: 45, "the change on the clean link")
        let cleanLag = lagMs(raw, heardUs: clean.us)
        let cleanFigures = p.currentFigures
        XCTAssertEqual(cleanFigures.droppedForLiveMs, 0, "dropped on a clean link")

        // Stalls of 1500 ms every 7.5 s for 31 s (a change may come among them), then a clean link:
        // what the underruns lost waits in the input, beyond the margin.
        try rig.command(["cmd": "link", "name": name, "plan": ["stall_ms": 1500, "every_s": 7.5]])
        let stallsFrom = monotonicUs()
        XCTAssertTrue(waitUntil(40) { monotonicUs() - stallsFrom > 31_000_000 })
        try rig.command(["cmd": "link", "name": name, "plan": [String: Any]()])
        let cleanFrom = monotonicUs()
        var stalled = p.currentFigures
        XCTAssertTrue(waitUntil(5) { stalled = p.currentFigures; return stalled.inputBacklogMs > 300 },
                      "the stalls left no backlog: \(stalled.inputBacklogMs) ms")
        let droppedBefore = stalled.droppedForLiveMs

        // The next change, on the clean link: the backlog is dropped in its silence, the music goes on.
        let back = try toneAfterSilence(from: cleanFrom + 1_000_000, timeout: 45, "the change after the stalls")
        let backLag = lagMs(raw, heardUs: back.us)
        var after = p.currentFigures
        XCTAssertTrue(waitUntil(5) { after = p.currentFigures; return after.inputBacklogMs < 300 },
                      "the backlog is still \(after.inputBacklogMs) ms")
        let f = { (x: Double?) in x.map { String(format: "%.0f ms", $0) } ?? "not found" }
        print("behind the server at a change: clean \(f(cleanLag)), after the stalls \(f(backLag)); its silence heard "
              + "\(Int(back.silenceMs)) ms (clean \(Int(clean.silenceMs))); input backlog \(cleanFigures.inputBacklogMs) ms clean, "
              + "\(stalled.inputBacklogMs) after the stalls, \(after.inputBacklogMs) after the change; dropped "
              + "\(after.droppedForLiveMs) ms in \(after.dropsForLive) run(s) (\(droppedBefore) by the end of the stalls); "
              + "heard delay \(cleanFigures.localDelayMs) ms clean, \(stalled.localDelayMs) after the stalls, \(after.localDelayMs) after the change")
        XCTAssertGreaterThan(after.droppedForLiveMs, droppedBefore, "nothing dropped at the change")
        XCTAssertEqual(recorder.recentTone(ms: 300, candidates: [lateTone] + tones), lateTone, "Late Start's tone does not go on")
    }
}
