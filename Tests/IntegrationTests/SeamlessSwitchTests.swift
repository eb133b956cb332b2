import Audio
import Foundation
import Support
import XCTest

/// Make before break (#24): a new stream URL while playing (a reload, another route) connects
/// the new stream first, lines it up with what plays by frame sample number and switches at that
/// sample. Heard through the null sink's monitor while one of the rig's steady tones plays: the
/// stretch around the switch has no longer silence than the stretch before it (a few ms of
/// margin) and the sine goes on without a jump of phase (nothing repeated or skipped); the status
/// never leaves Playing; the old connection closes only after the new one opened (the rig's
/// links log both). So too when the new link brings each page a moment after the old one (the
/// decoder takes a page as soon as it is whole, so the new connection is then never ahead). A
/// switch that cannot be lined up (another kind of stream) still plays.
extension Rig {
    /// The rig's link named `name` (clean, or as `plan` says): its Ogg and native stream URLs.
    func link(_ name: String, plan: [String: Any] = [:]) throws -> (ogg: String, native: String) {
        let reply = try XCTUnwrap(command(["cmd": "link", "name": name, "plan": plan]) as? [String: Any])
        return (try XCTUnwrap(reply["stream_url"] as? String), try XCTUnwrap(reply["native_stream_url"] as? String))
    }

    /// What the link `name` logged since `since` (monotonic s), in order.
    func linkLog(_ name: String, since: Double) throws -> [[String: Any]] {
        let log = try XCTUnwrap(command(["cmd": "link_log", "name": name, "since": since]) as? [String: Any])
        return try XCTUnwrap(log["events"] as? [[String: Any]])
    }

    /// When (monotonic s) the link `name` logged `event` ("open", "close") since `since`.
    func linkEvents(_ name: String, _ event: String, since: Double) throws -> [Double] {
        try linkLog(name, since: since).filter { $0["event"] as? String == event }.compactMap { $0["t"] as? Double }
    }
}

/// What a switch may not be heard as, in a recording of one of the rig's steady tones.
enum SwitchHearing {
    /// The longest run of near-silent samples (|x| ≤ 4 of 32767: a sine of the rig's level is
    /// that close to 0 for a sample or two at each crossing), ms.
    static func longestSilenceMs(_ w: [Int16]) -> Double {
        Double(longestRun(w, within: 4)) * 1000 / Double(Recorder.rate)
    }

    /// The longest run of samples within ±`limit` of zero, in samples.
    static func longestRun(_ w: some Sequence<Int16>, within limit: Int) -> Int {
        var longest = 0, run = 0
        for v in w {
            run = abs(Int(v)) <= limit ? run + 1 : 0
            longest = max(longest, run)
        }
        return longest
    }

    /// Where `w` lies within 10 ms of a silence (8 samples and more near 0; the rig's sine is
    /// near 0 for a sample at a crossing). PipeWire's graph drops a quantum or two (5–10 ms) now
    /// and then, loaded or not, with or without a switch: the sine on the two sides of such a
    /// dropout may be a part of a cycle apart, and its edges are no sine. A dropout is judged as
    /// a silence, not as a jump or another tone.
    static func nearSilence(_ w: [Int16]) -> [Bool] {
        var near = [Bool](repeating: false, count: w.count)
        let margin = Recorder.rate / 100
        var run = 0
        for (i, v) in w.enumerated() {
            run = abs(Int(v)) <= 4 ? run + 1 : 0
            // The silence and the margin before it once, then the margin after it as it goes on.
            let from = run == 8 ? max(0, i - run - margin) : run > 8 ? min(w.count - 1, i + margin) : w.count
            for j in stride(from: from, through: min(w.count - 1, i + margin), by: 1) { near[j] = true }
        }
        return near
    }

    /// Whether what is heard in `w` is the tone `freq` throughout: the whole stretch, or where it
    /// holds a silence (a dropout: `nearSilence`), each stretch of 20 ms and more between them.
    static func isTone(_ w: [Int16], _ freq: Int, candidates: [Int]) -> (Bool, [Int?]) {
        guard nearSilence(w).contains(true) else {
            let tone = Tone.dominant(w, rate: Recorder.rate, candidates: candidates)
            return (tone == freq, [tone])
        }
        let tones = tonesBetweenSilences(w, candidates: candidates)
        return (!tones.isEmpty && tones.allSatisfy { $0 == freq }, tones)
    }

    /// The tone that dominates each stretch of 20 ms and more away from a silence (nil where
    /// none does), in order.
    static func tonesBetweenSilences(_ w: [Int16], candidates: [Int]) -> [Int?] {
        let near = nearSilence(w)
        var tones: [Int?] = []
        var i = 0
        while i < w.count {
            guard !near[i] else { i += 1; continue }
            var j = i
            while j < w.count && !near[j] { j += 1 }
            if j - i >= Recorder.rate / 50 { tones.append(Tone.dominant(Array(w[i..<j]), rate: Recorder.rate, candidates: candidates)) }
            i = j
        }
        return tones
    }

    /// The largest jump off a sine of `freq` Hz, relative to its amplitude: a sine satisfies
    /// x[n+1] = 2 cos(ω) x[n] − x[n−1]; audio repeated, skipped or cut makes the remainder jump
    /// (a phase jump of δ gives about δ), where a whole sine leaves only rounding (~0.001). Not
    /// near a silence (`nearSilence`).
    static func largestJump(_ w: [Int16], freq: Int) -> Double {
        guard w.count > 3 else { return 0 }
        let nearSilence = nearSilence(w)
        let k = 2 * cos(2 * Double.pi * Double(freq) / Double(Recorder.rate))
        let amplitude = max(1, Double(w.map { abs(Int($0)) }.max() ?? 1))
        var worst = 0.0
        for n in 1..<(w.count - 1) where !nearSilence[n - 1] && !nearSilence[n] && !nearSilence[n + 1] {
            worst = max(worst, abs(Double(w[n + 1]) - k * Double(w[n]) + Double(w[n - 1])) / amplitude)
        }
        return worst
    }
}

class SeamlessSwitchTestCase: StreamAudioTestCase {
    func link(_ name: String, plan: [String: Any] = [:]) throws -> (ogg: String, native: String) { try rig.link(name, plan: plan) }

    func linkEvents(_ name: String, _ event: String, since: Double) throws -> [Double] {
        try rig.linkEvents(name, event, since: since)
    }

    /// The recording from `fromUs` to `toUs` (monotonic µs).
    func heard(fromUs: Int64, toUs: Int64) -> [Int16] {
        let a = recorder.index(atTime: fromUs), b = recorder.index(atTime: toUs)
        return recorder.window(a, max(0, b - a))
    }

    /// Plays `from`, switches to `to` mid-track and checks what is heard. `links`: the rig links
    /// the two URLs go through (for the connections' order), nil when not both do.
    /// `withinS`: how long after it is asked for the switch must be heard (and the old
    /// connection closed).
    ///
    /// On PipeWire, what is heard around one switch may show the machine's own fault rather
    /// than the switch's: PipeWire drops a quantum or two now and then, and with both cores
    /// busy its capture loses a few ms without a silence (the sine spliced a part of a cycle
    /// on, anywhere: in 2 of 14 recordings of 3 s around switches of
    /// `PipeWireSeamlessSwitchTests`, both before the switch; none in 16 without load). A switch
    /// made again the same way lines up by the same rule: a fault heard there is printed and the
    /// same switch is made again from a new player, which must be heard whole. On PulseAudio,
    /// which shows none of this, the first switch must be.
    func switchesSeamlessly(from: String, to: String, links: (String, String)?, withinS: Int64 = 4, _ what: String) throws {
        let heard = try switchOnce(from: from, to: to, links: links, withinS: withinS, what)
        guard !heard.isEmpty else { return }
        guard Self.soundKind == "pipewire" else { return XCTFail("\(what): \(heard.joined(separator: "; "))") }
        print("\(what): \(heard.joined(separator: "; ")); the same switch made again")
        for p in players { p.stop() }
        let again = try switchOnce(from: from, to: to, links: links, withinS: withinS, "\(what), again")
        XCTAssertEqual(again, [], "\(what): heard at the switch (\(heard)) and again")
    }

    /// One switch: asserts how it is made, and returns what is heard wrong around it.
    private func switchOnce(from: String, to: String, links: (String, String)?, withinS: Int64, _ what: String) throws -> [String] {
        // Mid-track, so that no track change is heard near the switch (the tracks are 30 s), and
        // after the seek's own jump has left Icecast's burst (the join plays its newest 0.5 s).
        try rig.rpc("core.playback.seek", ["time_position": 2000])
        let seekAtUs = monotonicUs()
        XCTAssertTrue(waitUntil(4) { monotonicUs() - seekAtUs > 2_000_000 })
        let since = Double(monotonicUs()) / 1_000_000
        let log = StatusLog()
        let p = player(from, log: log)
        p.play()
        let tone = try expectedTone()
        XCTAssertNotNil(recorder.waitForTone(tone, candidates: tones, timeout: 8), "\(what): no tone before the switch")
        XCTAssertTrue(waitUntil(3) { p.currentStatus == .playing }, "\(what): \(p.currentStatus)")
        // 3 s of steady playing before: the stretch the switch is held against.
        let steadyFromUs = monotonicUs()
        XCTAssertTrue(waitUntil(5) { monotonicUs() - steadyFromUs > 3_200_000 })
        let statusesBefore = log.all.count
        let switchAtUs = monotonicUs()
        var next = p.config
        next.url = to
        p.update(config: next)
        // Heard: the switch lands within `switchWaitMs`, then the sound server's buffer plays out.
        XCTAssertTrue(waitUntil(Double(withinS) + 6) { monotonicUs() - switchAtUs > withinS * 1_000_000 })
        if let (a, b) = links {
            let opened = try linkEvents(b, "open", since: since)
            let closed = try linkEvents(a, "close", since: since)
            XCTAssertEqual(opened.count, 1, "\(what): the new link opened \(opened.count) times")
            let closedAt = try XCTUnwrap(closed.first, "\(what): the old connection was not closed")
            XCTAssertLessThan(opened[0], closedAt, "\(what): the old connection closed before the new one opened")
            print(String(format: "%@: new connection opened %.0f ms after the switch was asked for, old one closed %.0f ms after that", what,
                         (opened[0] - Double(switchAtUs) / 1e6) * 1000, (closedAt - opened[0]) * 1000))
        }
        XCTAssertEqual(Array(log.all.dropFirst(statusesBefore)), [], "\(what): the status moved: \(log.all)")
        // Where the switch is heard (the player's figure, from the sound server's timing): the
        // 0.6 s around it against 0.6 s before the switch was asked for. A loaded machine
        // underruns now and then anywhere; the switch must add nothing where it lands.
        let f = p.currentFigures
        XCTAssertEqual(f.seamlessSwitches, 1, "\(what): not switched at the same sample")
        let heardUs = Int64(try XCTUnwrap(f.lastSwitchHeardAtMs, "\(what): the switch not placed")) * 1000
        XCTAssertTrue(heardUs > switchAtUs && heardUs < switchAtUs + withinS * 1_000_000,
                      "\(what): the switch heard \(heardUs - switchAtUs) µs after it was asked for")
        XCTAssertTrue(waitUntil(3) { monotonicUs() > heardUs + 600_000 })
        print(String(format: "%@: the switch heard %.0f ms after it was asked for", what, Double(heardUs - switchAtUs) / 1000))
        let before = heard(fromUs: switchAtUs - 800_000, toUs: switchAtUs - 200_000)
        let around = heard(fromUs: heardUs - 300_000, toUs: heardUs + 300_000)
        let (isTone, tonesAround) = SwitchHearing.isTone(around, tone, candidates: tones)
        let (quietBefore, quietAround) = (SwitchHearing.longestSilenceMs(before), SwitchHearing.longestSilenceMs(around))
        let (jumpBefore, jumpAround) = (SwitchHearing.largestJump(before, freq: tone), SwitchHearing.largestJump(around, freq: tone))
        print(String(format: "%@: longest silence %.1f ms before, %.1f ms around the switch; largest jump off the sine %.4f before, %.4f around",
                     what, quietBefore, quietAround, jumpBefore, jumpAround))
        XCTAssertEqual(p.config.url, to)
        var wrong: [String] = []
        if !isTone { wrong.append("another tone around the switch: \(tonesAround)") }
        if quietAround > quietBefore + 10 { wrong.append(String(format: "silence at the switch: %.1f ms", quietAround)) }
        if jumpAround >= 0.02 { wrong.append(String(format: "the sine jumps at the switch by %.4f (audio repeated or skipped)", jumpAround)) }
        return wrong
    }

    func aChangedURLSwitchesWithoutAGapOrAJump() throws {
        let (a, b) = ("switch-a-\(Self.soundKind)", "switch-b-\(Self.soundKind)")
        let (fromURL, toURL) = (try link(a).ogg, try link(b).ogg)
        try switchesSeamlessly(from: fromURL, to: toURL, links: (a, b), "Ogg, link to link")
    }

    /// Icecast direct and nginx's proxy of the same mount (as home and remote are): the positions
    /// are the same through a proxy.
    func icecastToNginxAndBackSwitchesWithoutAGapOrAJump() throws {
        try switchesSeamlessly(from: rig.info.stream_url, to: rig.info.nginx_stream_url, links: nil, "Icecast to nginx")
        for p in players { p.stop() }
        try switchesSeamlessly(from: rig.info.nginx_stream_url, to: rig.info.stream_url, links: nil, "nginx to Icecast")
    }

    /// The new link a moment behind the old one: a rate cap of 120 KB/s (a bucket of 50 ms, 6 KB)
    /// holds each of the rig's ~10 KB pages back ~33 ms, so the new connection gets each page
    /// after the old one's decoder has it (it takes a page as soon as it is whole). At 80 KB/s
    /// (~75 ms a page) the switch lined up in 2.2 s on PulseAudio and not within 4 s on PipeWire
    /// in a loaded CI run. At 120 KB/s it lines up in 1.8–2.1 s; it is given the 6 s a switch
    /// waits before it falls back to a reconnect, and the sound server's buffer after that.
    func aSlowerNewLinkSwitchesWithoutAGapOrAJump() throws {
        let (a, b) = ("switch-slow-a-\(Self.soundKind)", "switch-slow-b-\(Self.soundKind)")
        let (fromURL, toURL) = (try link(a).ogg, try link(b, plan: ["rate": 120_000]).ogg)
        try switchesSeamlessly(from: fromURL, to: toURL, links: (a, b), withinS: 7, "Ogg, to a slower link")
    }

    func nativeSwitchesWithoutAGapOrAJump() throws {
        let (a, b) = ("switch-native-a-\(Self.soundKind)", "switch-native-b-\(Self.soundKind)")
        let (fromURL, toURL) = (try link(a).native, try link(b).native)
        try switchesSeamlessly(from: fromURL, to: toURL, links: (a, b), "native, link to link")
    }

    /// Ogg to the native mount (another encoder, another numbering): cannot be lined up; the new
    /// connection plays as a reconnect's would, on the connection already made.
    func aSwitchThatCannotBeLinedUpStillPlays() throws {
        let (a, b) = ("switch-fallback-a-\(Self.soundKind)", "switch-fallback-b-\(Self.soundKind)")
        let (fromURL, toURL) = (try link(a).ogg, try link(b).native)
        let since = Double(monotonicUs()) / 1_000_000
        let p = player(fromURL)
        p.play()
        XCTAssertNotNil(recorder.waitForTone(try expectedTone(), candidates: tones, timeout: 8), "no tone before the switch")
        var next = p.config
        next.url = toURL
        let switchAtUs = monotonicUs()
        p.update(config: next)
        XCTAssertTrue(try waitUntil(10) { try !linkEvents(a, "close", since: since).isEmpty }, "the old connection stays")
        XCTAssertTrue(waitUntil(8) { monotonicUs() - switchAtUs > 2_000_000 && p.currentStatus == .playing }, "\(p.currentStatus)")
        // Music from the new connection: 2 s after the old one closed, and more bytes still coming.
        let closedAt = try XCTUnwrap(linkEvents(a, "close", since: since).first)
        XCTAssertTrue(waitUntil(5) { Double(monotonicUs()) / 1e6 > closedAt + 2 })
        XCTAssertNotNil(recorder.recentTone(ms: 300, candidates: tones), "silent after the switch")
        XCTAssertEqual(try linkEvents(b, "open", since: since).count, 1, "the connection made for the switch is the one played")
        XCTAssertEqual(try linkEvents(b, "close", since: since).count, 0, "the new connection closed")
    }
}

final class SeamlessSwitchTests: SeamlessSwitchTestCase {
    func testAChangedURLSwitchesWithoutAGapOrAJump() throws { try aChangedURLSwitchesWithoutAGapOrAJump() }
    func testIcecastToNginxAndBackSwitchesWithoutAGapOrAJump() throws { try icecastToNginxAndBackSwitchesWithoutAGapOrAJump() }
    func testASlowerNewLinkSwitchesWithoutAGapOrAJump() throws { try aSlowerNewLinkSwitchesWithoutAGapOrAJump() }
    func testNativeSwitchesWithoutAGapOrAJump() throws { try nativeSwitchesWithoutAGapOrAJump() }
    func testASwitchThatCannotBeLinedUpStillPlays() throws { try aSwitchThatCannotBeLinedUpStillPlays() }
}

final class PipeWireSeamlessSwitchTests: SeamlessSwitchTestCase {
    override class var soundKind: String { "pipewire" }
    func testAChangedURLSwitchesWithoutAGapOrAJump() throws { try aChangedURLSwitchesWithoutAGapOrAJump() }
    func testIcecastToNginxAndBackSwitchesWithoutAGapOrAJump() throws { try icecastToNginxAndBackSwitchesWithoutAGapOrAJump() }
    func testASlowerNewLinkSwitchesWithoutAGapOrAJump() throws { try aSlowerNewLinkSwitchesWithoutAGapOrAJump() }
    func testASwitchThatCannotBeLinedUpStillPlays() throws { try aSwitchThatCannotBeLinedUpStillPlays() }
}
