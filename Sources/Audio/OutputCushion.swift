import Support

/// One connection's side of the cushion, on the decoder thread (`StreamOutput`): the way back
/// towards live (`CushionPolicy`) with the cushion kept on purpose learned from the link
/// (`CushionTarget`, carried from one connection to the next in `StreamStats`).
struct OutputCushion {
    private(set) var policy = CushionPolicy()
    private(set) var target: CushionTarget
    /// The target last said in the log.
    private var toldTargetMs: Int

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

    /// A frame about to be played at `nowMs`: true when it is dropped instead.
    mutating func drop(_ f: DecodedFrame, arrivalMs: Int, nowMs: Int) -> Bool {
        policy.extraMs = target.currentMs(nowMs: nowMs)
        return policy.drop(frameMs: f.format.milliseconds(frames: f.samples), waitedMs: nowMs.subtracting(saturating: arrivalMs),
                           silent: CushionPolicy.isSilent(f), nowMs: nowMs)
    }

    /// At a measure of the delay, with the figures of the one before: an underrun since then
    /// (the output had nothing to play for longer than `underrunMs`) grows the target by what
    /// was missing. What was dropped since the last measure, and the target when it changed.
    mutating func measured(since last: StreamFigures, nowMs: Int) -> (droppedMs: Int, newTargetMs: Int?) {
        // Not `starvedMs`: heard-now counts a stall only from `StreamTuning.starvedAfterMs`; an
        // underrun is any time the output had nothing to play.
        guard last.localDelayMs > 0, last.delayMeasuredAtMs > 0 else { return finish(nowMs: nowMs) }
        let starved = max(0, nowMs.subtracting(saturating: last.delayMeasuredAtMs).subtracting(saturating: last.bufferedMs))
        if starved > Self.underrunMs {
            target.underran(starvedMs: starved, backlogMs: last.inputBacklogMs, nowMs: nowMs)
            Log.debug("stream: the output had nothing to play for \(starved) ms; cushion \(target.targetMs) ms")
        }
        return finish(nowMs: nowMs)
    }

    private mutating func finish(nowMs: Int) -> (droppedMs: Int, newTargetMs: Int?) {
        let now = target.currentMs(nowMs: nowMs)
        defer { toldTargetMs = now }
        return (policy.takeDropped(), now != toldTargetMs ? now : nil)
    }

    /// How long even the least waiting of the recent frames waited in the input (0 until known).
    func backlogMs(nowMs: Int) -> Int {
        policy.excessMs(nowMs: nowMs).map { $0.adding(saturating: policy.extraMs) } ?? 0
    }

    /// Less starving than this is no underrun: the sound server's timing reports and the
    /// extrapolation between them are this rough on a busy machine.
    static let underrunMs = 20
}
