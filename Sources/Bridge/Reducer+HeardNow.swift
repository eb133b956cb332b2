import Audio
import MPRIS
import Mopidy
import Support

/// Heard-now: the house's timeline is published when it is heard here.
extension BridgeState {
    /// Track changes and server-side pauses are published when they are heard: held for the
    /// stream delay while this computer plays. A track change the user asked for through the
    /// bridge is published at once instead, so the key feels instant; the music follows. Only what
    /// the command can cause goes through at once: a pause or stop from elsewhere in the same
    /// window is held, so Paused and Stopped never come before the music ends here.
    /// `replayed`: it arrived during a fetch and is applied after it, later than Mopidy sent it.
    mutating func route(_ e: MopidyEvent, _ m: Moment, replayed: Bool = false, _ fx: inout [Effect]) {
        guard e.isTimeline else { return apply(e, m, &fx) }
        var isStart = false
        if case .trackPlaybackStarted = e { isStart = true }
        let now = m.nowMs
        let userAsked = e.startsMusic && userAskedStarts > 0
            && (userAskedAtMs.map { now.subtracting(saturating: $0) < BridgeTuning.userCommandWindowMs } ?? false)
        // The start or resume a command here caused answers it: Mopidy says the state first.
        if userAsked, e.startsOrResumesTrack { userAskedStarts -= 1 }
        let (delay, measured) = heardDelay(m)
        // A replayed change is dated by the fetch's end, not by Mopidy: no measure of the delay.
        let onTimeMs = isStart && delay > 0 && !replayed ? announceChange(m, &fx) : nil
        if delay <= 0 || (isStart && userAsked) || (userAsked && lastDueMs <= now) {
            if isStart {
                // Newer than anything held: what still waits is dropped.
                held.removeAll()
                lastDueMs = 0
            }
            if lastDueMs <= now {
                if userAsked { fx.append(.log(.debug, "heard-now: \(e.name) at once, as asked here (\(userAskedStarts) more starts awaited)")) }
                return apply(e, m, &fx)
            }
        }
        let due = max(now.adding(saturating: delay), lastDueMs)
        lastDueMs = due
        held.append(Held(dueMs: due, heldMs: due - now, event: e, onTimeMs: onTimeMs))
        if !measured && estimateCheckAtMs == nil { estimateCheckAtMs = now.adding(saturating: BridgeTuning.estimateCheckMs) }
        fx.append(.log(.debug, "heard-now: holding \(e.name) for \(due - now) ms\(measured ? "" : " (estimated)")"))
    }

    /// The stream muted the audio around a change it grew the cushion at (`Playout.Pad`), or cut
    /// the new track's first moments with the old one's last (`Playout.Cut`): the new track is
    /// heard `laterMs` after the change's on-time moment `onTimeMs`, so its start,
    /// still held, is shown that much later, through every retiming, and nothing held after it
    /// sooner. The start is the one the stream was told of at that moment (`announceChange`);
    /// told again, it moves no further.
    mutating func heardLater(onTimeMs: Int, laterMs: Int, _ m: Moment, _ fx: inout [Effect]) {
        let later = min(max(0, laterMs), BridgeTuning.heardLaterCapMs)
        guard later > 0 else { return }
        guard held.contains(where: { $0.onTimeMs == onTimeMs }) else {
            return fx.append(.log(.debug, "heard-now: a change's new track is heard \(later) ms after it, and its start is not held"))
        }
        var moved = 0, last = 0
        held.updateEach { h in
            if h.onTimeMs == onTimeMs, later > h.laterMs {
                moved = later - h.laterMs
                h.laterMs = later
                h.dueMs = h.dueMs.adding(saturating: moved)
                h.heldMs = h.heldMs.adding(saturating: moved)
            }
            if h.dueMs < last {
                h.heldMs = h.heldMs.adding(saturating: last.subtracting(saturating: h.dueMs))
                h.dueMs = last
            }
            last = h.dueMs
        }
        lastDueMs = max(lastDueMs, last)
        // By the measure, where there is one: a start held back behind an earlier one moves
        // only as far as its own time says.
        retimeHeld(m)
        if moved > 0 { fx.append(.log(.debug, "heard-now: a start held \(moved) ms more: its new track is heard that much after the change (muted or cut there)")) }
    }

    /// The house's state as Mopidy last said it: that of the newest change still held back, else
    /// the one applied.
    var houseStateNewest: PlaybackState {
        held.last { $0.event.houseState != nil }?.event.houseState ?? server.state
    }

    /// What is held follows the delay as it moves: timed again, in order, by each measure. The
    /// first replaces the estimate (looked for every `estimateCheckMs` meanwhile); once nothing is
    /// heard here, everything is due at once, as when not listening; while the stream reconnects,
    /// what is buffered plays out and the times stand until the new connection's measure.
    ///
    /// A stall: the output has had nothing to play for `streamStarvedMs`. A change due more than
    /// `starvedGraceMs` after it ran dry follows audio not yet heard: it waits as long as the
    /// stall lasts (timed as if it lasts `starvedCheckMs` more, so it is looked at again that
    /// often), and comes once that audio arrives and is heard. One due before that followed audio
    /// heard already, or the last the server sent before it stopped sending, and is not held.
    mutating func retimeHeld(_ m: Moment) {
        guard !held.isEmpty else { estimateCheckAtMs = nil; return }
        var reconnecting = false
        if case .reconnecting? = local.stream { reconnecting = true }
        let (delay, measured) = heardDelay(m)
        guard measured && !reconnecting else {
            if let at = estimateCheckAtMs, at <= m.nowMs { estimateCheckAtMs = m.nowMs.adding(saturating: BridgeTuning.estimateCheckMs) }
            return
        }
        estimateCheckAtMs = nil
        let starved = delay > 0 ? min(max(0, m.streamStarvedMs), delay) : 0
        let unstarved = delay.subtracting(saturating: starved)
        let dryMs = m.nowMs.subtracting(saturating: starved)
        var last = 0
        held.updateEach { h in
            let arrived = h.dueMs.subtracting(saturating: h.heldMs)
            var due = arrived.adding(saturating: unstarved).adding(saturating: h.laterMs)
            if starved > 0 && due > dryMs.adding(saturating: BridgeTuning.starvedGraceMs) {
                due = due.adding(saturating: starved).adding(saturating: BridgeTuning.starvedCheckMs)
            }
            h.dueMs = max(due, last)
            h.heldMs = h.dueMs.subtracting(saturating: arrived)
            last = h.dueMs
        }
        lastDueMs = last
    }

    /// The house's pause or stop, once shown while this computer listens, silences what it
    /// decodes from then on, until where the house's resume is in the stream: music from before
    /// the pause that a stall brings after Paused is shown is not heard under it (the house sends
    /// silence while paused). The resume's audio is let through from `houseSilenceLeadMs` before
    /// where the server's delay places it, and all of it once the resume is shown. Only the
    /// house's state as Mopidy says it counts: with Mopidy unreachable, or never reached, the
    /// stream plays what it gets.
    mutating func followHouseSilence(_ m: Moment, _ fx: inout [Effect]) {
        var wanted = HouseSilence.none
        if config.heardSync && local.streamActive && server.synced && server.state != .playing {
            if let resume = held.first(where: { $0.event.houseState == .playing }) {
                let arrived = resume.dueMs.subtracting(saturating: resume.heldMs)
                wanted = .until(onTimeMs: arrived.adding(saturating: serverDelayMs)
                    .subtracting(saturating: BridgeTuning.houseSilenceLeadMs))
            } else {
                wanted = .untilTold
            }
        }
        guard wanted != houseSilence else { return }
        houseSilence = wanted
        fx.append(.stream(.silence(wanted)))
        fx.append(.log(.debug, "heard-now: the house's silence: \(wanted)"))
    }

    /// Applies the held events that are due, each at the moment it became due.
    mutating func releaseDue(_ m: Moment, _ fx: inout [Effect]) {
        while let first = held.first, first.dueMs <= m.nowMs {
            _ = held.popFirst()
            var at = m
            at.nowUs = Int64(first.dueMs) * 1000
            // Its positions are those of what is heard: it was held for as long as it trails.
            applyingHeldMs = first.heldMs
            applyingLaterMs = first.laterMs
            apply(first.event, at, &fx)
            applyingHeldMs = 0
            applyingLaterMs = 0
        }
    }
}
