// The fuzz build (scripts/fuzz playout) compiles this file with Support's into one module.
#if canImport(Support)
import Support
#endif

/// The playout: what becomes of each decoded frame, decided in one place. Pure: the frame, the
/// clock reading, the house's silence and the sound output's timing reports are inputs; the
/// decision, log lines and figures come out as values (`Decision`, `notes`). No lock, no I/O, no
/// clock read, no log call. One per connection (a switch's carries on); the cushion it learned
/// from the link (`target`) goes on to the next. Run by `Pipeline` on the "decoder" thread.
///
/// A frame is held (`joining`: Icecast's connect burst until it pauses; `warm`: paused here with
/// the connection kept), dropped (digital silence behind live, `Drops`; the end of a track before
/// an announced change, `Cut`) or played, with silence before it (after a stall that ran the
/// sound out, `rebufferMs`; at a change where the cushion grows, `Pad`) and muted where the house
/// is silent (`HouseSilence`) or around a change being padded. The heard delay (`Delay`) is
/// measured at each write (`measured`), and tells the cushion (`Target`) of underruns.
struct Playout {
    /// What happens with a frame.
    enum Fate: Equatable {
        case play
        /// Kept for later, unheard (joining, or warm): the newest `keepMs` is kept.
        case hold
        case drop
    }

    struct Decision: Equatable {
        var fate: Fate
        /// Silence written before the frame, ms.
        var silenceMs = 0
        /// The frame's first this many ms are silence (the window around a padded change).
        var mutedMs = 0
        /// The whole frame is silence: the house paused or stopped, and that is shown.
        var houseMuted = false
    }

    /// What the playout tells, for the log, the figures and the bridge.
    enum Note: Equatable {
        case log(Log.Level, String)
        /// Audio dropped to come back towards live (digital silence, or a cut before a change), ms.
        case droppedForLive(Int)
        /// Silence grown at a track change, ms.
        case grewAtChange(Int)
        /// The new track of the change at this on-time moment is heard `laterMs` after it.
        case changeHeardLater(onTime: Instant, laterMs: Int)
        /// The join ended, this much behind live skipped.
        case joined(skippedMs: Int)
    }

    enum Phase: Equatable {
        /// Icecast's connect burst is held until it pauses (since the first byte).
        case joining(since: Instant)
        case flowing
        /// Paused here with the connection kept (since then): read and decoded, nothing heard.
        case warm(since: Instant)
    }

    /// A measure of the heard delay, at a write to the sound server.
    struct Measure: Equatable {
        var delayMs: Int
        /// Written to the sound server and not yet heard.
        var soundServerMs: Int
        var at: Instant
        /// How long even the least waiting of the recent frames waited in the input.
        var backlogMs: Int
    }

    /// The newest audio of the join, and of a warm pause, that is kept.
    let keepMs: Int
    private(set) var phase: Phase
    private(set) var delay = Delay()
    private(set) var target: Target
    private(set) var drops = Drops()
    private(set) var cut = Cut()
    private(set) var pad = Pad()
    /// The last measure (nil: none since the output started).
    var last: Measure? = nil
    /// What was told since `takeNotes`.
    private(set) var notes: [Note] = []
    /// The least heard delay measured on this connection: how late a clean link plays here.
    private(set) var leastDelayMs: Int? = nil
    /// The last heard delay measured (kept through a pause, unlike `last`).
    private var lastDelayMs = 0
    /// The sound server's fill at the measure before the last.
    private var sinkBeforeMs = 0
    private var toldTargetMs: Int
    private var toldLeastMs = Int.max
    private var loggedDelayMs = 0
    /// The measure before the last underrun held for (`rebufferMs`): one hold per underrun.
    private var rebufferedAfter: Instant? = nil
    /// A frame was dropped since the last measure: an output that ran low meanwhile ran low by
    /// the drop, not for want of the link's audio.
    private var droppedSinceMeasure = false
    /// Audio of the join skipped before it was decoded, ms.
    private var skippedUndecodedMs = 0

    /// A connection's playout, joining from its first byte at `joining`, with the cushion
    /// `learned` on the connections before.
    init(keepMs: Int, learned: Target, joining: Instant) {
        self.keepMs = max(0, keepMs)
        phase = .joining(since: joining)
        target = learned
        target.reconnected()
        toldTargetMs = learned.targetMs
    }

    /// Less starving than this is no underrun: the sound server's timing reports and the
    /// extrapolation between them are this rough on a busy machine.
    static let underrunMs = 20

    mutating func takeNotes() -> [Note] {
        defer { notes.removeAll(keepingCapacity: true) }
        return notes
    }

    private mutating func log(_ level: Log.Level, _ text: String) { notes.append(.log(level, "stream: " + text)) }

    // MARK: - Frames

    /// Track changes the server announced since the last frame, by their on-time moments.
    mutating func announced(_ onTimes: [Instant]) {
        cut.announced(onTimes)
        pad.announced(onTimes)
    }

    /// A decoded frame of `samples` at `format`, whose bytes arrived at `arrival`, decoded at
    /// `now` after `skippedSamples` the join skipped undecoded; `house`: the house's silence
    /// (`StreamPlayer.silence`); `silent`: whether it is digital silence (asked only where that
    /// decides).
    mutating func decide(samples: Int, format: AudioFormat, arrival: Instant, skippedSamples: Int = 0,
                         house: HouseSilence = .none, at now: Instant, silent: () -> Bool) -> Decision {
        if skippedSamples > 0 {
            delay.skipped(samples: skippedSamples, rate: format.sampleRate)
            skippedUndecodedMs = skippedUndecodedMs.adding(saturating: format.milliseconds(frames: skippedSamples))
        }
        let start = delay.position
        delay.decoded(samples: samples, rate: format.sampleRate, arrival: arrival)
        arrived(arrival)
        let onTime = delay.onTime(at: start)
        let frameMs = format.milliseconds(frames: samples)
        let houseMuted = house.silences(onTimeMs: onTime?.ms)
        guard phase == .flowing else {
            // What lies within the window being silenced around a change is held silenced too.
            return Decision(fate: .hold, mutedMs: pad.mutedMs(onTime: onTime, frameMs: frameMs), houseMuted: houseMuted)
        }
        // Behind live (a stall's burst waits in the input): digital silence, and the end of a
        // track before a change the server announced, are dropped, not played.
        if drop(frameMs: frameMs, arrival: arrival, onTime: onTime, at: now, silent: silent) {
            delay.resumed()
            return Decision(fate: .drop, houseMuted: houseMuted)
        }
        let hold = rebufferMs(at: now)
        if hold > 0 {
            log(.info, "the link stalled beyond what was here: \(hold) ms more held before the music goes on, "
                + "a cushion of \(target.targetMs) ms against the next stall")
        }
        let t = padding(frameMs: frameMs, onTime: onTime, at: now)
        if t.silenceMs > 0 { grew(t.silenceMs) }
        return Decision(fate: .play, silenceMs: hold.adding(saturating: t.silenceMs), mutedMs: t.mutedMs, houseMuted: houseMuted)
    }

    /// Silence is written at a track change to grow the cushion.
    mutating func grew(_ ms: Int) {
        log(.info, "\(ms) ms of silence at the track change, so that the next stall is ridden out (a cushion of "
            + "\(target.targetMs) ms); heard delay \(lastDelayMs) ms")
        notes.append(.grewAtChange(ms))
    }

    /// The bytes of a decoded frame arrived (every frame: joining, warm or heard).
    mutating func arrived(_ at: Instant) {
        let before = target.neededAt
        target.arrived(at: at)
        if target.neededAt != before {
            log(.debug, "bytes came \(target.lastGapMs) ms after the last, beyond the link's rhythm: a stall; cushion \(target.targetMs) ms")
        }
    }

    /// Digital silence behind live (`Drops`), or the end of a track before a change (`Cut`):
    /// true when dropped. Once a cut ends, its change's new track is told heard as much after
    /// the change's on-time moment as the cut reached past it.
    mutating func drop(frameMs: Int, arrival: Instant, onTime: Instant?, at now: Instant, silent: () -> Bool) -> Bool {
        drops.extraMs = target.current(at: now)
        if drops.drop(frameMs: frameMs, waitedMs: now - arrival, silent: silent, at: now) {
            droppedSinceMeasure = true
            return true
        }
        let wasCutting = cut.cut != nil, coming = cut.changes.count
        let excess = drops.excessMs(at: now).map(cutMs(inputExcessMs:))
        let dropped = cut.drop(onTime: onTime, frameMs: frameMs, excessMs: excess)
        if cut.changes.count < coming {
            let o = onTime ?? Instant(ms: 0)
            log(.debug, "a track change \(cut.cut.map { "in \($0.to - o) ms: cut from \($0.from - o) ms" } ?? "passed"); "
                + "backlog \(excess.map(String.init) ?? "unknown") ms above the cushion \(drops.extraMs) ms, sound server "
                + "\(sinkBeforeMs) ms, heard delay \(lastDelayMs) ms; this frame arrived "
                + "\(onTime.map { arrival - $0 - frameMs } ?? 0) ms after its on-time end and waited \(now - arrival) ms")
        }
        // The waits measured before a cut say nothing of the backlog after it.
        if wasCutting && cut.cut == nil { drops.restartWindow() }
        if let r = cut.takeResumed(), r.laterMs > 0 { notes.append(.changeHeardLater(onTime: r.onTime, laterMs: r.laterMs)) }
        if dropped { droppedSinceMeasure = true }
        return dropped
    }

    /// Silence before a frame about to be played, and how much of it is muted, where a change
    /// the server announced lets the cushion grow (`Pad`); the change's new track is then heard
    /// after the muted window. The silence makes what waits in the input wait as much longer: at
    /// most what keeps that within the margin above the target, or the cut at the change would
    /// take it back, and none before the input has measured its backlog (after a join or a cut:
    /// a later change makes it up).
    mutating func padding(frameMs: Int, onTime: Instant?, at now: Instant) -> Pad.Treatment {
        let room = drops.excessMs(at: now).map { drops.marginMs.subtracting(saturating: $0) }
        let want = room.flatMap { r in padMs().map { min($0, r) } }
        let coming = pad.changes.count, next = pad.changes.first
        let t = pad.treat(onTime: onTime, frameMs: frameMs, wantMs: want, leastMs: drops.marginMs / 2)
        if pad.changes.count < coming && t.silenceMs == 0 && drops.extraMs > 0 {
            // Let go before its window began (the decoder was past it: a cut, a join), or
            // reached with too little wanted.
            var why = want.map { "\($0) ms wanted" } ?? "the want unknown"
            if let start = onTime, let x = next, start > x - pad.aroundMs {
                why = "its window had begun, the decoder at \(start - x) ms from it"
            }
            log(.debug, "no silence grown at a track change: \(why) (the cushion \(drops.extraMs) ms above the least heard delay "
                + "\(leastDelayMs.map(String.init) ?? "unknown") ms, heard delay \(lastDelayMs) ms, room "
                + "\(room.map(String.init) ?? "unknown") ms)")
        }
        if let x = t.paddedChange { notes.append(.changeHeardLater(onTime: x, laterMs: pad.aroundMs)) }
        return t
    }

    /// How much more the listener should be behind than the last measure says: the target above
    /// the connection's least delay, as after a stall that ran the sound out; at most the cap,
    /// nil without a measure to go by.
    func padMs() -> Int? {
        guard let least = leastDelayMs, lastDelayMs > 0 else { return nil }
        return min(target.capMs, least.adding(saturating: drops.extraMs).subtracting(saturating: lastDelayMs))
    }

    /// How much a cut at a change takes, given the input's backlog above the target: while a
    /// backlog waits in the input, the sound server is kept full too, where a clean link lets it
    /// run low before each page, so the heard delay stands above the least measured on this
    /// connection by more than the input's backlog. The cut takes that whole excess of the delay,
    /// but never more than the input and the sound server may hold: the least wait, the link's
    /// longest gap between reads more (the last page's audio), and the sound server's fill at the
    /// measure before the last.
    func cutMs(inputExcessMs: Int) -> Int {
        guard inputExcessMs > drops.marginMs, let least = leastDelayMs, lastDelayMs > 0 else { return inputExcessMs }
        let delayExcess = lastDelayMs.subtracting(saturating: least).subtracting(saturating: drops.extraMs)
        let pageMs = Int(min(max(target.usualGapMs, 0), Double(target.capMs)))
        let held = inputExcessMs.adding(saturating: pageMs).adding(saturating: sinkBeforeMs)
        return max(inputExcessMs, min(delayExcess, held))
    }
    /// How long to hold the frame about to be played after the output ran dry for want of audio
    /// (a stall of the link, not a busy machine: the frame had not waited as long): the target,
    /// grown by this underrun, is what the next stall of its kind needs beyond the connection's
    /// least delay; the music goes on the stall's gap behind what was measured before it. Once
    /// per underrun, at most the cap; 0 without a measure to go by.
    mutating func rebufferMs(at now: Instant) -> Int {
        guard let last, last.delayMs > 0, last.at != rebufferedAfter, let least = leastDelayMs else { return 0 }
        let starved = max(0, now - last.at - last.soundServerMs)
        guard starved > Self.underrunMs, !droppedSinceMeasure, let wait = drops.lastWaitMs, wait < starved else { return 0 }
        rebufferedAfter = last.at
        target.underran(starvedMs: starved, backlogMs: last.backlogMs, at: now)
        let wanted = least.adding(saturating: target.current(at: now))
        return min(target.capMs, max(0, wanted.subtracting(saturating: last.delayMs.adding(saturating: starved))))
    }

    /// How long even the least waiting of the recent frames waited in the input (0 until known).
    func backlogMs(at now: Instant) -> Int {
        drops.excessMs(at: now).map { $0.adding(saturating: drops.extraMs) } ?? 0
    }
}

extension Playout {
    // MARK: - Measures

    /// A write to the sound server at `now`, with its timing report: `soundServerMs` written and
    /// not yet heard, `heldMs` decoded and not yet written. Returns the measure (nil: no frame yet).
    mutating func measured(soundServerMs: Int, heldMs: Int, at now: Instant) -> Measure? {
        guard let ms = delay.delayMs(now: now, soundServerMs: soundServerMs, heldMs: heldMs) else { return nil }
        let m = measured(delayMs: ms, soundServerMs: soundServerMs, at: now)
        if abs(ms - loggedDelayMs) > 250 {
            // A jump of the measure is said with its parts (--verbose): what moved it.
            loggedDelayMs = ms
            log(.debug, "heard delay \(ms) ms: decoded audio \(Int(delay.lateMs)) ms late, \(soundServerMs) ms in the sound server, \(heldMs) held")
        }
        return m.measure
    }

    /// What a measure tells: digital silence dropped since the last one, a cut before a track
    /// change that ended since, the target when it changed (also told in `notes`).
    struct Told: Equatable {
        var droppedMs = 0
        var cutMs = 0
        var newTargetMs: Int? = nil
    }

    /// A measure of the heard delay (`delayMs`) at `now`: an underrun since the last measure (the
    /// output had nothing to play for longer than `underrunMs`) grows the target by what was
    /// missing; what was dropped since is told.
    mutating func measured(delayMs ms: Int, soundServerMs: Int, at now: Instant) -> (measure: Measure, told: Told) {
        var told = Told()
        let before = lastDelayMs
        if let last, last.delayMs > 0 { underrun(since: last, at: now) }
        droppedSinceMeasure = false
        sinkBeforeMs = last?.soundServerMs ?? 0
        (told.droppedMs, told.cutMs) = (drops.takeDropped(), cut.takeDropped().ms)
        if told.droppedMs > 0 {
            log(.info, "dropped \(told.droppedMs) ms of digital silence to come back towards live; heard delay \(before) → \(ms) ms")
            notes.append(.droppedForLive(told.droppedMs))
        }
        if told.cutMs > 0 {
            log(.info, "dropped \(told.cutMs) ms before the track change to come back towards live; heard delay \(before) → \(ms) ms")
            notes.append(.droppedForLive(told.cutMs))
        }
        let targetMs = target.current(at: now)
        if targetMs != toldTargetMs {
            toldTargetMs = targetMs
            told.newTargetMs = targetMs
            log(.info, "the cushion kept against stalls is \(targetMs) ms")
        }
        lastDelayMs = ms
        if ms > 0 { leastDelayMs = min(leastDelayMs ?? ms, ms) }
        if let least = leastDelayMs, least < toldLeastMs.subtracting(saturating: 100) {
            toldLeastMs = least
            log(.debug, "the least heard delay on this connection is \(least) ms")
        }
        let m = Measure(delayMs: ms, soundServerMs: soundServerMs, at: now, backlogMs: backlogMs(at: now))
        last = m
        return (m, told)
    }

    private mutating func underrun(since last: Measure, at now: Instant) {
        let starved = max(0, now - last.at - last.soundServerMs)
        guard starved > Self.underrunMs else { return }
        // The frame that ended it had been here longer than the output went without: the audio
        // was here, the decoder late (a busy machine), and no cushion would have ridden it out.
        // Not again for an underrun `rebufferMs` took (its silence is no want of audio), nor for
        // one a drop made.
        let machines = (drops.lastWaitMs ?? 0) >= starved
        if !machines && last.at != rebufferedAfter && !droppedSinceMeasure {
            target.underran(starvedMs: starved, backlogMs: last.backlogMs, at: now)
        }
        log(.debug, "the output had nothing to play for \(starved) ms\(machines ? " with the audio here (a busy machine)" : ""); cushion \(target.targetMs) ms")
    }

    // MARK: - The join and the warm pause

    /// The frames of a burst that count, newest first, given as (first sample, end): the run that
    /// ends where the next begins, from the newest back. A header that does not fit (a false sync
    /// in native FLAC) is passed over.
    static func joinRun(_ frames: [(first: Int64, end: Int64)]) -> [Int] {
        guard !frames.isEmpty else { return [] }
        var run = [frames.count - 1]
        for i in stride(from: frames.count - 2, through: 0, by: -1) where frames[i].end == frames[run[run.count - 1]].first {
            run.append(i)
        }
        return run
    }

    /// Where the join starts decoding the burst gathered undecoded: the frame from which the
    /// newest `keepSamples` (at least) of whole frames is decoded, and how many samples lie before
    /// it (in the run, `joinRun`). Nothing is skipped when less than that is there.
    static func joinStart(_ frames: [(first: Int64, end: Int64)], keepSamples: Int64) -> (index: Int, skippedSamples: Int64) {
        let run = joinRun(frames)
        guard let newest = run.first.map({ frames[$0] }), let oldest = run.last.map({ frames[$0] }),
              let k = run.first(where: { newest.end.subtractingReportingOverflow(frames[$0].first).partialValue >= keepSamples })
        else { return (0, 0) }
        return (k, frames[k].first.subtractingReportingOverflow(oldest.first).partialValue)
    }

    /// While joining, whether the join ends now: the data paused (`idle`) with at least `keepMs`
    /// held, the join took longer than `StreamTuning.joinCapMs`, or the bytes ended. `droppedMs`:
    /// what the hold dropped, older than the newest `keepMs`.
    mutating func joinEnds(heldMs: Int, droppedMs: Int, idle: Bool, ended: Bool, at now: Instant) -> Bool {
        guard case .joining(let since) = phase,
              ended || (idle && heldMs >= keepMs) || now - since > StreamTuning.joinCapMs else { return false }
        phase = .flowing
        let skipped = droppedMs.adding(saturating: skippedUndecodedMs)
        notes.append(.joined(skippedMs: skipped))
        if skipped > 0 { log(.info, "joined \(skipped) ms behind live; skipped that to play near live") }
        return true
    }

    /// Paused here with the connection kept: held from now on, and the output's measures start
    /// again when it is heard.
    mutating func paused(at now: Instant) {
        phase = .warm(since: now)
        last = nil
    }

    /// A Play while warm: heard again at the live edge, what is held first (`heldMs`).
    mutating func resumed(heldMs: Int, at now: Instant) {
        guard case .warm(let since) = phase else { return }
        phase = .flowing
        log(.info, "resumed the connection kept warm after \(now - since) ms; \(heldMs) ms held")
        delay.resumed()
    }
}

/// The stream's audio silenced because the house paused or stopped and that is shown here
/// (`StreamPlayer.silence`): music from before the pause that a stall brings late is not heard
/// under Paused. What the house sends while paused is silence anyway, or nothing.
public enum HouseSilence: Equatable, Sendable {
    case none
    /// Until told otherwise.
    case untilTold
    /// Until the audio that would have arrived at `onTimeMs` had every page come on time
    /// (monotonic ms; `BoundaryRequest` places a change the same way): where the house's
    /// resume is in the stream, shown or not yet.
    case until(onTimeMs: Int)

    /// Whether audio that would have arrived at `onTimeMs` is silenced (nil: not known yet).
    public func silences(onTimeMs: Int?) -> Bool {
        switch self {
        case .none: return false
        case .untilTold: return true
        case .until(let end): return onTimeMs.map { $0 < end } ?? true
        }
    }
}
