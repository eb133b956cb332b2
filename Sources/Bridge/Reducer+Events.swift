import Mopidy
import Support

/// Mopidy's events as they apply to the copy of its state, and the position they anchor.
extension BridgeState {
    mutating func apply(_ e: MopidyEvent, _ m: Moment, _ fx: inout [Effect]) {
        switch e {
        case .trackPlaybackStarted(let tl):
            let before = server.current?.tlid
            server.setCurrent(tl)
            server.state = .playing
            // Heard from its start, or from as far into it as a pad's muted window or a cut at
            // the change reached (`heardLater`): the house is that much less ahead of it.
            anchorPosition(applyingLaterMs, m)
            alignedDelayMs = applyingHeldMs.subtracting(saturating: applyingLaterMs)
            // The same entry started again (Previous restarting it, a repeated single track) is
            // a jump to its start, announced whatever its size.
            trackChanged(m)
            if before == tl.tlid { seekedEvent = true }
            fx.append(.log(.info, "now playing: \(describe(tl.track))"))
            // setCurrent keeps the cover only for the same entry of the tracklist.
            if server.artURL == nil { fx.append(.fetchArt(tl.track)) }
            refresh(.neighbours, &fx)
            settleTracklist(m)
            trackChangeHeard(m, &fx)
        case .trackPlaybackPaused(let tl, let pos):
            server.state = .paused
            anchorPosition(pos, m)
            if let tl { named(tl, m, &fx) }
        case .trackPlaybackResumed(let tl, let pos):
            server.state = .playing
            anchorPosition(pos, m)
            if let tl { named(tl, m, &fx) }
        case .trackPlaybackEnded:
            break  // the next track_playback_started or playback_state_changed follows
        case .playbackStateChanged(_, let new):
            let pos = new == .stopped ? 0 : server.serverPositionMs(nowUs: m.nowUs)
            server.state = new
            anchorPosition(pos, m)
            // At the end of its tracklist Mopidy stops with no current track, and no event says
            // so: what it has is fetched once the stop is heard, unless a start waits (it names
            // its track). A pause or stop still held is heard first: the fetch waits for it.
            // (It says stopped twice there, and a pause of the stopped house keeps no track.)
            if new == .stopped, eventsConnected, !held.contains(where: { $0.event.startsMusic }) {
                if held.contains(where: { $0.event.houseState != nil }) {
                    resyncAtMs = min(resyncAtMs ?? m.nowMs, m.nowMs)
                } else if syncing {
                    resyncAgain = true
                } else {
                    resync(&fx)
                }
            }
        case .seeked(let pos):
            anchorPosition(pos, m)
            seekedEvent = true
        case .volumeChanged(let v):
            server.volume = v
            // Mopidy says its volume at every start of its pipeline, and a start right after
            // another can drop a mute without saying so (Mopidy 3.4 with the software mixer:
            // stop, mute, play, play): the mixer is read again.
            refresh(.mixer, &fx)
        case .muteChanged(let on):
            server.muted = on
            // A reading under way may be older than this.
            if refreshing.contains(.mixer) { refreshAgain.insert(.mixer) }
        case .optionsChanged:
            refresh(.options, &fx)
            refresh(.neighbours, &fx)
        case .tracklistChanged:
            refresh(.neighbours, &fx)
            settleTracklist(m)
        case .streamTitleChanged(let title):
            // A late title for the previous track can arrive after the new track started: only
            // a title that differs from the track's own name replaces it, and it is dropped again
            // at the next track change (setCurrent).
            guard let cur = server.current, title != cur.track.name, !title.isEmpty else { break }
            let uri = cur.track.uri
            if uri.hasPrefix("http") || uri.hasPrefix("stream") || cur.track.name == nil { server.streamTitle = title }
        case .playlistsLoaded, .playlistChanged, .playlistDeleted:
            refresh(.playlists, &fx)
        case .other:
            break
        }
    }

    /// The house's position is `ms` from now. While this computer listens that is what is shown;
    /// while it does not, what is shown stays where listening stopped (a resync, another client's
    /// seek or pause, the house pausing after Pause with control = server move only the house).
    mutating func anchorPosition(_ ms: Int, _ m: Moment) {
        alignedDelayMs = applyingHeldMs
        server.positionMs = max(0, ms)
        server.positionAnchorUs = m.nowUs
        if listening { local.frozen = nil }
    }

    /// The house's position as heard here: `ms` (the server's) less the heard delay.
    mutating func anchorHeard(_ ms: Int, _ m: Moment) {
        let delay = server.state == .playing ? heardDelayMs(m) : 0
        anchorPosition(ms.subtracting(saturating: delay), m)
        alignedDelayMs = delay
    }

    /// Another track is current, or the same from its start: a position shown while nothing is
    /// heard starts again at 0.
    /// A pause or a resume names its track: one Mopidy moved to without a start (the house's
    /// Next while stopped, then its pause) is shown from it.
    mutating func named(_ tl: TlTrack, _ m: Moment, _ fx: inout [Effect]) {
        guard tl.tlid != server.current?.tlid else { return }
        server.setCurrent(tl)
        trackChanged(m)
        fx.append(.log(.info, "now on: \(describe(tl.track))"))
        if server.artURL == nil { fx.append(.fetchArt(tl.track)) }
        refresh(.neighbours, &fx)
    }

    mutating func trackChanged(_ m: Moment) {
        if local.frozen != nil { local.frozen = .init(positionMs: 0, sinceUs: m.nowUs) }
    }
}
