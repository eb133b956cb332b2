import Audio
import MPRIS
import Mopidy
import Support

/// How the position follows what is heard here, and what is published of it.
extension BridgeState {
    // MARK: - This computer's stream

    /// While listening, the position is that of what is heard: it trails the house's by the
    /// heard delay (`alignedDelayMs`). Otherwise it is the house's own.
    mutating func streamStatus(_ s: StreamStatus, _ m: Moment) {
        let wasActive = server.localActive
        server.localStream = s
        switch s {
        case .playing:
            // Listening starts (again): from here on, the position is what is heard.
            if !listening && server.state == .playing {
                let delay = heardDelayMs(m)
                anchorPosition(server.serverPositionMs(nowUs: m.nowUs).subtracting(saturating: delay), m)
                alignedDelayMs = delay
            }
            listening = true
        case .paused, .stopped, .failed, .outputLost:
            // Listening stops (`outputLost`: the sound output went away and this computer paused,
            // as after Pause): the house runs that much ahead of what was last heard, which stays
            // shown.
            if listening && server.state == .playing {
                let heard = server.serverPositionMs(nowUs: m.nowUs)
                anchorPosition(heard.adding(saturating: alignedDelayMs), m)
                server.frozen = .init(positionMs: heard, sinceUs: m.nowUs)
            }
            listening = false
        case .connecting, .buffering, .reconnecting:
            // On its way to be heard (Play, or OpenUri, was pressed): no longer Stopped, and
            // Playing from here, so the shown position moves on from where it stood.
            server.stoppedHere = false
            if !wasActive, var f = server.frozen {
                f.sinceUs = m.nowUs
                server.frozen = f
            }
        }
    }

    /// While nothing is heard here the published position stays where listening stopped.
    mutating func freezeOrRelease(_ m: Moment) {
        if server.stoppedHere {
            server.frozen = .init(positionMs: 0, sinceUs: m.nowUs)  // Play starts from 0
        } else if server.hearing || server.state != .playing {
            server.frozen = nil
        } else if server.frozen == nil {
            server.frozen = .init(positionMs: server.serverPositionMs(nowUs: m.nowUs), sinceUs: m.nowUs)
        }
    }

    // MARK: - Publishing

    /// Publishes what changed, then `Seeked` if the position jumped: for a `seeked` event
    /// whatever the size, otherwise (Previous restarting the track, a resync's correction,
    /// listening resumed at the live edge) when the same track's position moved by more than
    /// `BridgeTuning.seekedThresholdUs` against where consumers extrapolate it. Never on a track
    /// change (the spec: a new track starts at its own position), nor into or out of Stopped.
    mutating func publish(_ m: Moment, _ fx: inout [Effect]) {
        let p = server.playerState()
        let sameTrack = p.metadata.trackID == published.metadata.trackID && p.metadata.trackID != TrackMetadata.noTrackID
        let now = p.position(nowUs: m.nowUs)
        // Stopped is at 0 by definition: going there, or on from there, is no jump.
        let stopped = p.playbackStatus == .stopped || published.playbackStatus == .stopped
        let jumped = sameTrack && !stopped
            && abs(now.subtracting(saturating: published.position(nowUs: m.nowUs))) > BridgeTuning.seekedThresholdUs
        let signal = (seekedEvent && sameTrack) || jumped
        seekedEvent = false
        if p != published {
            published = p
            fx.append(.publish(p))
        }
        if signal { fx.append(.seeked(positionUs: now)) }
    }
}
