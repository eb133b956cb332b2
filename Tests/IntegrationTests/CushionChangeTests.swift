import Foundation
import Mopidy
import Support
import XCTest

/// A run of silence in a recording: where it was heard, how long, and whether the same tone is
/// heard on both sides (mid-track) or not (at a change).
struct HeardGap {
    var us: Int64
    var ms: Int
    var midTrack: Bool
}

extension Sequence<HeardGap> {
    /// "when s: how long ms" of each, when counted from `fromUs` (for the figures tests print).
    func text(fromUs: Int64) -> String {
        map { "\(Double($0.us - fromUs) / 1e6) s: \($0.ms) ms" }.joined(separator: ", ")
    }
}

extension Recorder {
    /// Runs of at least 10 ms of samples within ±100 of zero (the rig's tones peak far above)
    /// heard from `fromUs` to `toUs`, each with the tones 50 ms either side of it.
    func gaps(fromUs: Int64, toUs: Int64, candidates: [Int]) -> [HeardGap] {
        let start = index(atTime: fromUs), end = index(atTime: toUs)
        let x = window(start, end - start)
        let minRun = Recorder.rate / 100, side = Recorder.rate / 20
        var found: [HeardGap] = []
        var i = 0
        while i < x.count {
            guard abs(Int(x[i])) <= 100 else { i += 1; continue }
            var j = i
            while j < x.count && abs(Int(x[j])) <= 100 { j += 1 }
            if j - i >= minRun, i >= side, j + side <= x.count {
                let before = Tone.dominant(Array(x[(i - side)..<i]), rate: Recorder.rate, candidates: candidates)
                let after = Tone.dominant(Array(x[j..<(j + side)]), rate: Recorder.rate, candidates: candidates)
                found.append(HeardGap(us: time(ofSample: start + i), ms: (j - i) * 1000 / Recorder.rate,
                                      midTrack: before != nil && before == after))
            }
            i = j
        }
        return found
    }
}

extension DaemonTestCase {
    /// The longest gap mid-track the sound server leaves of itself, where the bridge's output
    /// had audio all along: PipeWire's graph drops a quantum or more now and then, loaded or
    /// not (10 and 15 ms in unloaded runs of `PipeWireCushionChangeTests`, 42 ms in a CI run
    /// with a dozen such gaps, the bridge's own measure showing its output never ran dry);
    /// PulseAudio none (gaps count from 10 ms).
    var soundServerOwnGapMs: Int { Self.soundKind == "pipewire" ? 50 : 0 }
}

/// A track change: Mopidy's event (monotonic µs); the new track heard − the event, and − when
/// it left Icecast (the bridge's own lag), ms; its title signalled − heard, ms.
struct Change {
    var us: Int64
    var lagMs: Int
    var ownMs: Int
    var titleMs: Int?
}

extension DaemonTestCase {
    /// The way back towards live at a track change (#24 item 2), through the rig's link, with
    /// the house changing track (Mopidy's `next`) every 10 s: a clean link, then a stall of
    /// 2500 ms and four of 1500 ms every 7.5 s, then a clean link again. On the clean link the
    /// bridge plays near live (each change after the first heard within 1.3 s of leaving
    /// Icecast, where mpv plays Icecast's burst, 3 s behind). The first stall is heard,
    /// and its backlog stays as a cushion: the stalls after it are not heard (no gap of 150 ms or
    /// more, mid-track or at a change: a busy machine's own underruns are shorter). Once the
    /// cushion is let go, the backlog goes at a track change: the old track's end is dropped and
    /// the new one starts on time, so the lag behind the server comes back within 0.3 s of its
    /// clean lag where it settles (0.5 s at any change) within 60 s of the link healing (the new
    /// track heard − when it left Icecast; heard − Mopidy's event is printed beside it, which the
    /// rig's encoder moves too). No gap mid-track once the link is clean (the music is never cut
    /// but before a change), and the titles stay within 250 ms of the music, heard. What the
    /// server's own stream lacked (a track it carried 5 s and more after Mopidy's event, a
    /// silence of its own), every listener hears: it is printed and not judged. Figures printed.
    func cushionComesBackTowardsLiveAtTrackChanges() throws {
        let name = "cushion-change-\(Self.soundKind)"
        try startDaemonOnLink(name, ["--verbose"])
        // The server's own part: when each track left Icecast, from a listener straight to it.
        let raw = RawListener(url: rig.info.stream_url, user: rig.info.user, password: rig.info.password, ogg: true)
        defer { raw.stop() }
        // The figures come from the log: no `groove-bridge status` children while the music is measured.
        let (rec, tones, titles, events) = try listen(toneTimeout: 15)
        XCTAssertTrue(waitUntil(5) { events.connected }, "no Mopidy events")

        // The house changes track every 10 s, from 2.5 s after each phase's plan; the phases follow
        // the clock (a schedule of the stimulus, not a wait for its effect).
        var nextChangeUs = monotonicUs() + 2_500_000
        func until(_ us: Int64) -> Bool { waitUntil(15) { monotonicUs() >= us } }
        func phase(_ plan: [String: Any], seconds: Double) throws -> Int64 {
            let reply = try XCTUnwrap(rig.command(["cmd": "link", "name": name, "plan": plan]) as? [String: Any])
            let sinceUs = Int64(try XCTUnwrap(reply["since"] as? Double) * 1_000_000)
            let endUs = sinceUs + Int64(seconds * 1_000_000)
            while nextChangeUs < endUs {
                XCTAssertTrue(until(nextChangeUs))
                try rig.rpc("core.playback.next")
                nextChangeUs += 10_000_000
            }
            XCTAssertTrue(until(endUs))
            return sinceUs
        }
        let cleanUs = try phase([:], seconds: 25)
        // The first stall is longer than all a bridge may hold at its join (~2 s): it surely
        // underruns and leaves a backlog. Then four of 1500 ms, the last over at 31.5 s.
        let stallsUs = try phase(["stall_ms": 2500, "every_s": 7.5], seconds: 10.5)
        _ = try phase(["stall_ms": 1500, "every_s": 7.5], seconds: 33)
        let healedUs = try phase([:], seconds: 70)
        let endUs = monotonicUs()
        // The last change is heard (a window of the clean link, not an event).
        XCTAssertTrue(until(endUs + 6_000_000))
        let linkLog = (try? rig.linkLog(name, since: Double(cleanUs) / 1e6)) ?? []
        let log = daemonLog()
        print(log.split(separator: "\n").filter { $0.contains("stream:") || $0.contains("heard-now") }.joined(separator: "\n"))
        fflush(nil)  // the figures, before the process may end
        let lines = log.split(separator: "\n").filter { $0.contains("stream: dropped") || $0.contains("cushion kept") }
        func numbers(_ pattern: String) -> [Int] {
            lines.compactMap { l -> Int? in
                guard let r = l.range(of: pattern, options: .regularExpression) else { return nil }
                return l[r].split(separator: " ").lazy.compactMap { Int($0) }.first
            }
        }
        let cuts = numbers(#"dropped \d+ ms before the track change"#), dropped = numbers(#"dropped \d+ ms"#)

        // Each change: Mopidy's event, the new track first heard, its title signalled.
        let started: [(us: Int64, title: String)] = events.list.withLock { l in
            l.compactMap { e in
                guard e.us >= cleanUs, e.us < endUs, case .trackPlaybackStarted(let tl) = e.event else { return nil }
                return (e.us, tl.track.name ?? "")
            }
        }
        // A change whose track the server's own stream did not carry within 5 s of Mopidy's
        // event (the rig's encoder stuck: every listener hears its silence) is not judged.
        var changes: [Change] = [], serversOwn: [String] = []
        for c in started {
            guard let freq = rig.track(titled: c.title)?.freq else { XCTFail("\(c.title) is not the rig's"); continue }
            guard let left = raw.onTimeUs(ofTone: freq, candidates: tones, fromUs: c.us), left - c.us <= 5_000_000 else {
                serversOwn.append("\(c.title) after \(Double(c.us - cleanUs) / 1e6) s")
                continue
            }
            guard let heard = rec.firstHeard(freq, candidates: tones, fromUs: c.us) else {
                XCTFail("\(c.title) after \(Double(c.us - cleanUs) / 1e6) s was not heard")
                continue
            }
            let signal = titles.first(c.title, fromUs: c.us - 100_000)
            changes.append(Change(us: c.us, lagMs: Int((heard - c.us) / 1000), ownMs: Int((heard - left) / 1000),
                                  titleMs: signal.map { Int(($0 - heard) / 1000) }))
        }
        let clean = changes.filter { $0.us < stallsUs }, during = changes.filter { $0.us >= stallsUs && $0.us < healedUs }
        let healed = changes.filter { $0.us >= healedUs }
        func text(_ cs: [Change]) -> String {
            cs.map { "\(String(format: "%.1f", Double($0.us - cleanUs) / 1e6)) s: lag \($0.lagMs) (own \($0.ownMs)), title \($0.titleMs.map(String.init) ?? "none")" }
                .joined(separator: "; ")
        }
        // A gap where the server's own stream was silent for half of it and 150 ms or more (a
        // stall's worth: its changes leave less) is every listener's: not judged. Looked for at the
        // gap less the bridge's own lag of the last change heard before it, ±0.5 s (a stall
        // moves the lag between changes).
        func ownLagMs(atUs us: Int64) -> Int { changes.last { $0.us + Int64($0.lagMs) * 1000 <= us }?.ownMs ?? changes.first?.ownMs ?? 0 }
        func theServers(_ g: HeardGap) -> Bool {
            let at = g.us - Int64(ownLagMs(atUs: g.us)) * 1000
            let silentMs = raw.longestSilenceMs(onTimeFromUs: at - 500_000, toUs: at + Int64(g.ms) * 1000 + 500_000)
            return silentMs >= 150 && silentMs * 2 >= Double(g.ms)
        }
        let heardGaps = rec.gaps(fromUs: cleanUs, toUs: endUs, candidates: tones)
        let gaps = heardGaps.filter { !theServers($0) }
        if !serversOwn.isEmpty || gaps.count < heardGaps.count {
            print("not judged, the server's own silence: changes \(serversOwn); gaps \(heardGaps.filter(theServers).text(fromUs: cleanUs))")
        }
        print("cushion at changes (\(Self.soundKind)): lag behind the server and title − heard per change, ms — clean: "
              + "\(text(clean)) | stalls: \(text(during)) | healed (from \(Double(healedUs - cleanUs) / 1e6) s): \(text(healed)); "
              + "gaps mid-track \(gaps.filter(\.midTrack).text(fromUs: cleanUs)), at changes \(gaps.filter { !$0.midTrack }.text(fromUs: cleanUs)); "
              + "cushion up to \(numbers(#"stalls is \d+ ms"#).max() ?? 0) ms; dropped \(dropped.reduce(0, +)) ms in \(dropped.count) drop(s)\n"
              + lines.joined(separator: "\n"))
        fflush(nil)  // the figures, before the process may end

        XCTAssertGreaterThanOrEqual(clean.count, 2, "changes on the clean link")
        XCTAssertGreaterThanOrEqual(healed.count, 6, "changes after the link healed")
        // Near live on a clean link (#24: at most 1.1 s behind the server, a release build on a
        // quiet machine; mpv plays Icecast's burst, 3.1–3.2 s behind): the clean link's changes
        // after the first (a join's backlog goes at the first) heard within 1.3 s of leaving
        // Icecast, a debug build with both cores busy included (573–935 ms in CI runs; the
        // server's own part, Mopidy's event to Icecast, ~0.27 s more).
        if let farthest = clean.dropFirst().map(\.ownMs).max() {
            XCTAssertLessThanOrEqual(farthest, 1300, "far behind live on a clean link: \(text(clean))")
        }
        // The bridge's own lag (heard − when it left Icecast): the rig's encoder, jolted by the
        // queue's changes, moves the lag behind Mopidy's event by as much for every listener.
        // The least of the clean link's (a busy machine's underrun there adds to the later ones).
        let cleanLag = clean.map(\.ownMs).min() ?? 0
        XCTAssertGreaterThan((during + healed).map(\.ownMs).max() ?? 0, cleanLag + 300, "the stalls left no backlog to come back from")
        // The first stall is heard; its backlog rides out the ones after it.
        let first = gaps.first { $0.ms >= 150 && $0.us > stallsUs }
        XCTAssertNotNil(first, "the first stall, longer than all a join holds, was not heard")
        if let first {
            let later = gaps.filter { $0.us > first.us + Int64(first.ms) * 1000 + 1_000_000 && $0.ms >= 150 }
            XCTAssertEqual(later.map(\.ms), [], "stalls heard after the first: \(later.text(fromUs: cleanUs))")
        }
        // The way back: a cut at a change after the link healed, within 60 s of it, that comes
        // off the lag, heard: the first change heard 500 ms and more sooner than the one before.
        guard let k = healed.indices.dropFirst().first(where: { healed[$0 - 1].ownMs - healed[$0].ownMs >= 500 }) else {
            XCTFail("no change after the link healed came 500 ms sooner than the one before: \(text(healed)); cuts \(cuts)")
            return
        }
        let cut = healed[k], fall = healed[k - 1].ownMs - cut.ownMs
        let cutMs = cuts.first { $0 >= 500 && abs($0 - fall) <= 250 }
        XCTAssertNotNil(cutMs, "the lag fell by \(fall) ms, no cut of that much: \(cuts)")
        XCTAssertLessThan(cut.us - healedUs, 60_000_000, "no cut within 60 s of the link healing")
        // Back near the clean lag from the cut on: within 0.3 s of it where it settles (the median
        // of the changes from the cut on), and no change beyond 0.5 s: what is left is the cut's
        // rounding (whole frames), the sound server's own jitter and a busy machine's underruns,
        // not the stalls' backlog.
        let after = healed[k...].map(\.ownMs)
        XCTAssertLessThanOrEqual(after.sorted()[after.count / 2], cleanLag + 300, "the lag settled beyond 0.3 s of the clean lag (\(cleanLag) ms): \(after)")
        XCTAssertLessThanOrEqual(after.max() ?? Int.max, cleanLag + 500, "the lag did not come back near the clean lag (\(cleanLag) ms): \(after)")
        // Nothing cut in the music: the bridge's output never ran dry for want of audio from that
        // cut on (its own measure: a gap the cut made; a busy machine's, with the audio here, is
        // not), no gap mid-track as the new track starts beyond what the
        // sound server drops of itself (printed above), and its title with its music.
        let afterCut = log.split(separator: "\n").drop { !$0.contains("dropped \(cutMs ?? -1) ms before the track change") }
        XCTAssertEqual(afterCut.filter { $0.contains("the output had nothing to play") && !$0.contains("a busy machine") }, [],
                       "the output ran dry for want of audio after the cut")
        let heardUs = cut.us + Int64(cut.lagMs) * 1000
        XCTAssertEqual(gaps.filter { $0.midTrack && $0.us > heardUs - 1_000_000 && $0.us < heardUs + 4_000_000 && $0.ms > soundServerOwnGapMs }
                           .map(\.ms), [], "gaps mid-track around the change cut before")
        XCTAssertLessThanOrEqual(abs(cut.titleMs ?? Int.max), 250, "the title of the change cut before is not with its music")
        print("cushion at changes (\(Self.soundKind)): cuts \(cuts) ms; the lag fell by \(fall) ms at the change "
              + "\(Double(cut.us - healedUs) / 1e6) s after the link healed; own lag \(cleanLag) ms clean, \(healed[k - 1].ownMs) before, "
              + "\(after) from then on (\(after.allSatisfy { $0 <= cleanLag + 300 } ? "" : "not ")within 0.3 s of the clean lag); link: "
              + "\(linkLog.map { "\($0["event"] ?? "?")\($0["bytes"].map { " \($0) bytes" } ?? "")" }.joined(separator: ", "))")
        fflush(nil)  // the figures, before the process may end
        // The titles of the other changes after the link healed are not late (one timed before a
        // busy machine's underrun comes early by as much: printed above).
        for c in healed {
            guard let off = c.titleMs else { XCTFail("no title at \(Double(c.us - cleanUs) / 1e6) s"); continue }
            XCTAssertLessThanOrEqual(off, 250, "the title \(off) ms after the music at \(Double(c.us - cleanUs) / 1e6) s")
        }
    }
}

final class CushionChangeTests: DaemonTestCase {
    func testTheBacklogGoesAtATrackChange() throws { try cushionComesBackTowardsLiveAtTrackChanges() }
}

final class PipeWireCushionChangeTests: DaemonTestCase {
    override class var soundKind: String { "pipewire" }

    func testTheBacklogGoesAtATrackChange() throws { try cushionComesBackTowardsLiveAtTrackChanges() }
}
