import Audio
import MPRIS
import Mopidy
import Support

/// How the position follows what is heard here, and what is published of it.
extension BridgeState {
    // MARK: - This computer's stream

    /// While listening, the position is that of what is heard: it trails the house's by the
    /// heard delay (`alignedDelayMs`). Otherwise the house's position is its own, and what is
    /// shown stays where listening stopped (`LocalState.frozen`).
    mutating func streamStatus(_ s: StreamStatus, _ m: Moment) {
        let wasActive = local.streamActive
        local.stream = s
        switch s {
        case .playing:
            // Listening starts (again): from here on, the position is what is heard.
            if !listening && server.state == .playing { anchorHeard(server.serverPositionMs(nowUs: m.nowUs), m) }
            listening = true
        case .paused, .stopped, .failed, .outputLost:
            // Listening stops (`outputLost`: the sound output went away and this computer paused,
            // as after Pause): the house runs that much ahead of what was last heard, which stays
            // shown.
            if listening && server.state == .playing {
                let heard = server.serverPositionMs(nowUs: m.nowUs)
                anchorPosition(heard.adding(saturating: alignedDelayMs), m)
                local.frozen = .init(positionMs: heard, sinceUs: m.nowUs)
            }
            listening = false
        case .connecting, .buffering, .reconnecting:
            // On its way to be heard (Play, or OpenUri, was pressed): no longer Stopped, and
            // Playing from here, so the shown position moves on from where it stood.
            local.stopPressed = false
            if !wasActive, var f = local.frozen {
                f.sinceUs = m.nowUs
                local.frozen = f
            }
        }
    }

    /// While nothing is heard here the published position stays where listening stopped; while
    /// this computer listens to a paused house, it is the house's (paused) position.
    mutating func freezeOrRelease(_ m: Moment) {
        if local.stopPressed {
            local.frozen = .init(positionMs: 0, sinceUs: m.nowUs)  // Play starts from 0
        } else if local.hears(server) || (listening && server.state != .playing) {
            local.frozen = nil
        } else if local.frozen == nil && server.state == .playing {
            local.frozen = .init(positionMs: server.serverPositionMs(nowUs: m.nowUs), sinceUs: m.nowUs)
        }
    }

    // MARK: - Publishing

    /// Publishes what changed, then `Seeked` if the position jumped: for a `seeked` event
    /// whatever the size, otherwise (Previous restarting the track, a resync's correction,
    /// listening resumed at the live edge) when the same track's position moved by more than
    /// `BridgeTuning.seekedThresholdUs` against where consumers extrapolate it. Never on a track
    /// change (the spec: a new track starts at its own position), nor into or out of Stopped.
    mutating func publish(_ m: Moment, _ fx: inout [Effect]) {
        let p = playerState(server, local)
        let sameTrack = p.metadata.trackID == published.metadata.trackID && p.metadata.trackID != TrackMetadata.noTrackID
        let now = p.position(nowUs: m.nowUs)
        // Stopped is at 0 by definition: going there, or on from there, is no jump.
        let stopped = p.playbackStatus == .stopped || published.playbackStatus == .stopped
        let jumped = sameTrack && !stopped
            && abs(now.subtracting(saturating: published.position(nowUs: m.nowUs))) > BridgeTuning.seekedThresholdUs
        // A `seeked` event is signalled when it moves what is shown (not while the shown position
        // stays where listening stopped).
        let moved = now != published.position(nowUs: m.nowUs)
        let signal = (seekedEvent && sameTrack && !stopped && moved) || jumped
        seekedEvent = false
        let lists = ListSignals.trackList(from: published.tracklist, to: p.tracklist, current: p.metadata.trackID)
            .map { (MPRISInterface.trackList, $0) }
            + ListSignals.playlists(from: published.playlists, to: p.playlists).map { (MPRISInterface.playlists, $0) }
        if p != published {
            published = p
            fx.append(.publish(p))
        }
        if signal { fx.append(.seeked(positionUs: now)) }
        for (iface, s) in lists { fx.append(.signal(interface: iface, member: s.member, args: s.args)) }
    }
}
