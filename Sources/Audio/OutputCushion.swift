import Support

/// One connection's side of the cushion, on the decoder thread (`StreamOutput`): the way back
/// towards live (`CushionPolicy`) with the cushion kept on purpose learned from the link
/// (`CushionTarget`, carried from one connection to the next in `StreamStats`).
struct OutputCushion {
    private(set) var policy = CushionPolicy()
    /// The way back towards live at a track change the server announced.
    private(set) var change = ChangeCut()
    /// The cushion grown at a track change the server announced.
    private(set) var pad = ChangePad()
    private(set) var target: CushionTarget
    /// The target last said in the log.
    private var toldTargetMs: Int
    /// The least delay last said in the log (--verbose).
    private var toldLeastMs = Int.max
    /// The heard delay before the drops since the last measure (for the log).
    private var delayBeforeDropMs = 0
    /// What the sound server held at the last measure.
    private var lastSinkMs = 0
    /// The least heard delay measured on this connection: how late a clean link plays here.
    private var leastDelayMs: Int? = nil
    /// The measure before the last underrun held for (`rebufferMs`): one hold per underrun.
    private var rebufferedAfterMs = 0
    /// A frame was dropped since the last measure: an output that ran low meanwhile ran low by
    /// the drop, not for want of the link's audio.
    private var droppedSinceMeasure = false

    init(learned: CushionTarget) {
        target = learned
        target.reconnected()
        toldTargetMs = learned.targetMs
    }

    /// The bytes of a decoded frame arrived at `arrivalMs` (every frame: joining, warm or heard).
    mutating func arrived(atMs arrivalMs: Int) {
        let before = target.neededAtMs
        target.arrived(atMs: arrivalMs)
        if target.neededAtMs != before { Log.debug("stream: bytes came \(target.lastGapMs) ms after the last, beyond the link's rhythm: a stall; cushion \(target.targetMs) ms") }
    }

    /// A frame about to be played at `nowMs`, whose audio would have arrived at `onTimeMs` had
    /// every page come on time, with the changes announced since the last frame (`ComingChanges`):
    /// true when it is dropped instead. Digital silence (`CushionPolicy`) or the end of a track
    /// before a change (`ChangeCut`); once a cut ends, its change's new track is told heard as
    /// much after the change's on-time moment as the cut reached past it (in `stats`).
    mutating func drop(_ f: DecodedFrame, arrivalMs: Int, onTimeMs: Int?, changes: [Int], nowMs: Int, stats: StreamStats) -> Bool {
        policy.extraMs = target.currentMs(nowMs: nowMs)
        let frameMs = f.format.milliseconds(frames: f.samples)
        change.announced(changes)
        pad.announced(changes)
        if policy.drop(frameMs: frameMs, waitedMs: nowMs.subtracting(saturating: arrivalMs), silent: CushionPolicy.isSilent(f), nowMs: nowMs) {
            droppedSinceMeasure = true
            return true
        }
        let wasCutting = change.cut != nil, coming = change.changes.count
        let excess = policy.excessMs(nowMs: nowMs).map(cutMs(inputExcessMs:))
        let dropped = change.drop(onTimeMs: onTimeMs, frameMs: frameMs, excessMs: excess)
        if change.changes.count < coming {
            Log.debug("stream: a track change \(change.cut.map { "in \($0.toMs - (onTimeMs ?? 0)) ms: cut from \($0.fromMs - (onTimeMs ?? 0)) ms" } ?? "passed"); "
                      + "backlog \(excess.map(String.init) ?? "unknown") ms above the cushion \(policy.extraMs) ms, sound server \(lastSinkMs) ms, heard delay \(delayBeforeDropMs) ms; this frame arrived \(onTimeMs.map { arrivalMs - $0 - frameMs } ?? 0) ms after its on-time end and waited \(nowMs - arrivalMs) ms")
        }
        // The waits measured before a cut say nothing of the backlog after it.
        if wasCutting && change.cut == nil { policy.restartWindow() }
        if let r = change.takeResumed(), r.laterMs > 0 { stats.changeHeardLater(onTimeMs: r.onTimeMs, laterMs: r.laterMs) }
        if dropped { droppedSinceMeasure = true }
        return dropped
    }

    /// A frame about to be played at `nowMs` (not dropped, `drop`): silence before it and how
    /// much of it is muted, where a change the server announced lets the cushion grow
    /// (`ChangePad`); the change's new track is then heard after the muted window (told in
    /// `stats`, whether or not the silence gets written). The silence makes what waits in the
    /// input wait as much longer: at most what keeps that within the margin above the target,
    /// or the cut at the change would take it back (`ChangeCut`), and none before the input has
    /// measured its backlog (after a join or a cut: a later change makes it up). The least
    /// delay measured while a backlog waits (a join on a busy machine, never cut) says more is
    /// wanted than is.
    mutating func padding(_ f: DecodedFrame, onTimeMs: Int?, nowMs: Int, stats: StreamStats) -> ChangePad.Treatment {
        let room = policy.excessMs(nowMs: nowMs).map { policy.marginMs.subtracting(saturating: $0) }
        let want = room.flatMap { r in padMs().map { min($0, r) } }
        let coming = pad.changes.count, next = pad.changes.first
        let t = pad.treat(onTimeMs: onTimeMs, frameMs: f.format.milliseconds(frames: f.samples), wantMs: want, leastMs: policy.marginMs / 2)
        if pad.changes.count < coming && t.silenceMs == 0 && policy.extraMs > 0 {
            // Let go before its window began (the decoder was past it: a cut, a join), or reached
            // with too little wanted.
            var why = want.map { "\($0) ms wanted" } ?? "the want unknown"
            if let start = onTimeMs, let x = next, start > x.subtracting(saturating: pad.aroundMs) {
                why = "its window had begun, the decoder at \(start.subtracting(saturating: x)) ms from it"
            }
            Log.debug("stream: no silence grown at a track change: \(why)"
                      + " (the cushion \(policy.extraMs) ms above the least heard delay \(leastDelayMs.map(String.init) ?? "unknown") ms, "
                      + "heard delay \(delayBeforeDropMs) ms, room \(room.map(String.init) ?? "unknown") ms)")
        }
        if let x = t.paddedChangeMs { stats.changeHeardLater(onTimeMs: x, laterMs: pad.aroundMs) }
        return t
    }

    /// The silence `padding` asked for was written, from a heard delay of `beforeMs`.
    func grew(_ ms: Int, beforeMs: Int, stats: StreamStats) {
        Log.info("stream: \(ms) ms of silence at the track change, so that the next stall is ridden out (a cushion of "
                 + "\(target.targetMs) ms); heard delay \(beforeMs) → \(delayBeforeDropMs) ms")
        stats.grewAtChange(ms: ms)
    }

    /// The last measure of the heard delay.
    var lastDelayMs: Int { delayBeforeDropMs }

    /// How much more the listener should be behind than the last measure of the heard delay
    /// says: the target above the connection's least delay, as after a stall that ran the sound
    /// out (`rebufferMs`); at most the cap, nil without a measure to go by.
    func padMs() -> Int? {
        guard let least = leastDelayMs, delayBeforeDropMs > 0 else { return nil }
        let wanted = least.adding(saturating: policy.extraMs)
        return min(target.capMs, wanted.subtracting(saturating: delayBeforeDropMs))
    }

    /// How much a cut at a change takes, given the input's backlog above the target
    /// (`CushionPolicy.excessMs`): while a backlog waits in the input, the sound server is kept
    /// full too, where a clean link lets it run low before each page, so the heard delay stands
    /// above the least measured on this connection by more than the input's backlog. The cut
    /// takes that whole excess of the delay (a clean link played well with the least), but never
    /// more than the input and the sound server may hold: the least wait, the link's longest gap
    /// between reads more (the last page's audio), and the sound server's fill.
    func cutMs(inputExcessMs: Int) -> Int {
        guard inputExcessMs > policy.marginMs, let least = leastDelayMs, delayBeforeDropMs > 0 else { return inputExcessMs }
        let delayExcess = delayBeforeDropMs.subtracting(saturating: least).subtracting(saturating: policy.extraMs)
        let pageMs = Int(min(max(target.usualGapMs, 0), Double(target.capMs)))
        let held = inputExcessMs.adding(saturating: pageMs).adding(saturating: lastSinkMs)
        return max(inputExcessMs, min(delayExcess, held))
    }

    /// How long to hold the frame about to be played after the output ran dry for want of
    /// audio (a stall of the link, not a busy machine: the frame had not waited as long): the
    /// target, grown by this underrun, is what the next stall of its kind needs beyond the
    /// connection's least delay; the music would go on the stall's gap behind what was measured
    /// before it. Once per underrun, at most the cap; 0 without a measure to go by.
    mutating func rebufferMs(since last: StreamFigures, nowMs: Int) -> Int {
        guard last.localDelayMs > 0, last.delayMeasuredAtMs > 0, last.delayMeasuredAtMs != rebufferedAfterMs,
              let least = leastDelayMs else { return 0 }
        let starved = max(0, nowMs.subtracting(saturating: last.delayMeasuredAtMs).subtracting(saturating: last.bufferedMs))
        guard starved > Self.underrunMs, !droppedSinceMeasure, let wait = policy.lastWaitMs, wait < starved else { return 0 }
        rebufferedAfterMs = last.delayMeasuredAtMs
        target.underran(starvedMs: starved, backlogMs: last.inputBacklogMs, nowMs: nowMs)
        let wanted = least.adding(saturating: target.currentMs(nowMs: nowMs))
        let resumed = last.localDelayMs.adding(saturating: starved)
        return min(target.capMs, max(0, wanted.subtracting(saturating: resumed)))
    }

    /// What a measure of the delay tells: digital silence dropped since the last one, a cut
    /// before a track change that ended since (ms), and the target when it changed.
    struct Measured: Equatable {
        var droppedMs = 0
        var cutMs = 0
        var newTargetMs: Int? = nil
    }

    /// At a measure of the delay, with the figures of the one before: an underrun since then
    /// (the output had nothing to play for longer than `underrunMs`) grows the target by what
    /// was missing. What was dropped since the last measure, and the target when it changed.
    mutating func measured(since last: StreamFigures, nowMs: Int) -> Measured {
        // Not `starvedMs`: heard-now counts a stall only from `StreamTuning.starvedAfterMs`; an
        // underrun is any time the output had nothing to play.
        guard last.localDelayMs > 0, last.delayMeasuredAtMs > 0 else { return finish(nowMs: nowMs) }
        let starved = max(0, nowMs.subtracting(saturating: last.delayMeasuredAtMs).subtracting(saturating: last.bufferedMs))
        // The frame that ended it had been here longer than the output went without: the audio
        // was here, the decoder late (a busy machine), and no cushion would have ridden it out.
        let machines = (policy.lastWaitMs ?? 0) >= starved
        // Not again for an underrun `rebufferMs` took (the silence it wrote is no want of audio),
        // nor for one a drop made.
        if starved > Self.underrunMs && !machines && last.delayMeasuredAtMs != rebufferedAfterMs && !droppedSinceMeasure {
            target.underran(starvedMs: starved, backlogMs: last.inputBacklogMs, nowMs: nowMs)
        }
        if starved > Self.underrunMs {
            Log.debug("stream: the output had nothing to play for \(starved) ms\(machines ? " with the audio here (a busy machine)" : ""); cushion \(target.targetMs) ms")
        }
        return finish(nowMs: nowMs)
    }

    private mutating func finish(nowMs: Int) -> Measured {
        droppedSinceMeasure = false
        let now = target.currentMs(nowMs: nowMs)
        defer { toldTargetMs = now }
        return Measured(droppedMs: policy.takeDropped(), cutMs: change.takeDropped().ms, newTargetMs: now != toldTargetMs ? now : nil)
    }

    /// At a measure of the heard delay (`delayMs`): what was dropped since the last one, and
    /// the target when it changed, said in the log and the figures.
    mutating func measured(delayMs: Int, stats: StreamStats, nowMs: Int) {
        let m = measured(since: stats.snapshot, nowMs: nowMs)
        lastSinkMs = stats.snapshot.bufferedMs
        if m.droppedMs > 0 {
            Log.info("stream: dropped \(m.droppedMs) ms of digital silence to come back towards live; heard delay \(delayBeforeDropMs) → \(delayMs) ms")
            stats.droppedForLive(ms: m.droppedMs)
        }
        if m.cutMs > 0 {
            Log.info("stream: dropped \(m.cutMs) ms before the track change to come back towards live; heard delay \(delayBeforeDropMs) → \(delayMs) ms")
            stats.droppedForLive(ms: m.cutMs)
        }
        if let t = m.newTargetMs { Log.info("stream: the cushion kept against stalls is \(t) ms") }
        delayBeforeDropMs = delayMs
        if delayMs > 0 { leastDelayMs = min(leastDelayMs ?? delayMs, delayMs) }
        if let least = leastDelayMs, least < toldLeastMs.subtracting(saturating: 100) {
            toldLeastMs = least
            Log.debug("stream: the least heard delay on this connection is \(least) ms")
        }
        stats.cushion(target, backlogMs: backlogMs(nowMs: nowMs))
    }

    /// How long even the least waiting of the recent frames waited in the input (0 until known).
    func backlogMs(nowMs: Int) -> Int {
        policy.excessMs(nowMs: nowMs).map { $0.adding(saturating: policy.extraMs) } ?? 0
    }

    /// Less starving than this is no underrun: the sound server's timing reports and the
    /// extrapolation between them are this rough on a busy machine.
    static let underrunMs = 20
}
