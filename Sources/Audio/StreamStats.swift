import Support
import Synchronization

/// The player's figures, kept by the parts that see each happen (the transfer counts bytes, the
/// input corrupt pages, the output samples and the delay, the network loop reconnects) under a
/// lock of its own, so that no part needs the player's. Thread-safe.
final class StreamStats: Sendable {
    private let figures = Mutex(StreamFigures())

    var snapshot: StreamFigures { figures.withLock { $0 } }

    func received(bytes: Int) { figures.withLock { $0.bytesReceived += bytes } }

    func decoded(samples: Int, format: AudioFormat) {
        figures.withLock {
            $0.samplesDecoded += samples
            $0.format = format
        }
    }

    /// A frame libFLAC could not decode, or an Ogg page whose checksum failed.
    func lostSync() { figures.withLock { $0.lostSync += 1 } }

    /// Digital silence dropped to come back towards live (`CushionPolicy`).
    func droppedForLive(ms: Int) {
        figures.withLock {
            $0.droppedForLiveMs = $0.droppedForLiveMs.adding(saturating: ms)
            $0.dropsForLive += 1
        }
    }

    /// Silence put before a track change to grow the cushion against stalls (`ChangePad`).
    func grewAtChange(ms: Int) {
        figures.withLock {
            $0.grownAtChangesMs = $0.grownAtChangesMs.adding(saturating: ms)
            $0.growthsAtChanges += 1
        }
    }

    func input(backlogMs: Int) { figures.withLock { $0.inputBacklogMs = backlogMs } }

    /// The cushion learned from the link (`CushionTarget`), carried from one connection's output
    /// to the next, and the input's backlog.
    var cushionTarget: CushionTarget { learned.withLock { $0 } }
    private let learned = Mutex(CushionTarget())
    /// The track changes the server announced, where the output may cut the end of a track to
    /// come back towards live (`ChangeCut`); from one connection's output to the next.
    let comingChanges = ComingChanges()

    func cushion(_ target: CushionTarget, backlogMs: Int) {
        learned.withLock { $0 = target }
        figures.withLock {
            $0.cushionTargetMs = target.targetMs
            $0.inputBacklogMs = backlogMs
        }
    }

    func joined(skippedMs: Int) { figures.withLock { $0.skippedAtJoinMs = skippedMs } }

    func output(bufferedMs: Int, delayMs: Int, atMs: Int = monotonicMs()) {
        let beforeMs = figures.withLock {
            let before = $0.localDelayMs
            $0.bufferedMs = bufferedMs
            $0.localDelayMs = delayMs
            $0.delayMeasuredAtMs = atMs
            return before
        }
        if delayMs > 0, beforeMs.subtracting(saturating: delayMs) > StreamTuning.delayFallToldMs,
           let told = fallObserver.withLock({ $0 }) {
            told(beforeMs, delayMs)
        }
    }

    /// Told (on the decoder thread) when the delay measure falls by more than
    /// `StreamTuning.delayFallToldMs` at once (`fromMs`, `toMs`): a drop towards live. Whoever
    /// times changes by the delay looks again at once instead of at its next input.
    func onDelayFall(_ observer: (@Sendable (_ fromMs: Int, _ toMs: Int) -> Void)?) {
        fallObserver.withLock { $0 = observer }
    }
    private let fallObserver = Mutex<(@Sendable (Int, Int) -> Void)?>(nil)

    /// The new track of the change whose on-time moment is `onTimeMs` is heard `laterMs` after
    /// that moment: the audio around it is muted, with silence before it (`ChangePad`), or its
    /// first moments went with the cut before it (`ChangeCut`).
    func changeHeardLater(onTimeMs: Int, laterMs: Int) {
        laterObserver.withLock({ $0 })?(onTimeMs, laterMs)
    }

    /// Told (on the decoder thread) of each `changeHeardLater`.
    func onChangeHeardLater(_ observer: (@Sendable (_ onTimeMs: Int, _ laterMs: Int) -> Void)?) {
        laterObserver.withLock { $0 = observer }
    }
    private let laterObserver = Mutex<(@Sendable (Int, Int) -> Void)?>(nil)

    /// A connection ends or starts: its delay is measured afresh (the last one's, aged by the
    /// outage, would read as a stall).
    func delayUnmeasured() {
        figures.withLock {
            $0.localDelayMs = 0
            $0.delayMeasuredAtMs = 0
        }
    }

    /// Nothing plays any more: nothing is buffered and nothing is late.
    func outputStopped() {
        output(bufferedMs: 0, delayMs: 0)
        input(backlogMs: 0)
    }

    func note(error: String) { figures.withLock { $0.lastError = Log.scrub(error) } }

    /// A switch took a new connection over at the same sample (make before break); its first
    /// audio is heard at `heardAtMs` (nil: not known yet).
    func switched(heardAtMs: Int?) {
        figures.withLock {
            $0.seamlessSwitches += 1
            $0.lastSwitchHeardAtMs = heardAtMs
        }
    }

    /// A connection ended and another will follow.
    func connectionEnded(reason: String) {
        let scrubbed = Log.scrub(reason)
        figures.withLock {
            $0.lastError = scrubbed
            $0.reconnects += 1
        }
        delayUnmeasured()
    }
}

/// What the output multiplies the audio by: the software volume (`volume = local`) and the
/// house's silence, set by the player and read by the output for every frame. Thread-safe.
final class Gain: Sendable {
    private let level = Mutex(1.0)
    private let house = Mutex(HouseSilence.none)

    var value: Double {
        get { level.withLock { $0 } }
        set { level.withLock { $0 = min(1, max(0, newValue)) } }
    }

    var silence: HouseSilence {
        get { house.withLock { $0 } }
        set { house.withLock { $0 = newValue } }
    }

    /// The level for audio that would have arrived at `onTimeMs` had every page come on time
    /// (nil: not known yet).
    func value(onTimeMs: Int?) -> Double {
        house.withLock { $0.silences(onTimeMs: onTimeMs) } ? 0 : value
    }
}
