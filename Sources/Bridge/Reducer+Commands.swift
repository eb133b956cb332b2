import Audio
import MPRIS
import Mopidy
import Support

/// What the user asks for through MPRIS, and the configuration.
extension BridgeState {
    // MARK: - Commands and configuration

    mutating func command(_ c: PlayerCommand, _ m: Moment, _ fx: inout [Effect]) {
        let serverControl = !hasStream || config.control == .server
        switch c {
        case .play:
            // Play always leads to music: the stream connects (unless it already plays or is on
            // its way: Play while playing is no change), and a paused or stopped house is resumed
            // or started.
            if hasStream && !local.streamActive { fx.append(.stream(.play)) }
            // The house as Mopidy last said it: a pause from elsewhere still held back counts.
            let house = houseStateNewest
            if server.synced && house != .playing {
                // The house starting again because of this Play is shown at once, like Next.
                userAsks(m)
                stopAskedAtMs = nil
                call(house == .paused ? .resume : .play, &fx)
            }
        case .pause:
            if hasStream { fx.append(.stream(.pause)) }
            if serverControl { call(.pause, &fx) }
        case .stop:
            // Stop means "stop listening here": Stopped at position 0, the track still shown;
            // Play joins the live edge again.
            if hasStream {
                local.stopPressed = true
                fx.append(.stream(.stop))
            }
            if serverControl {
                call(.stop, &fx)
                // Nothing asked here before it starts the house any more.
                stopAskedAtMs = m.nowMs
                userAskedStarts = 0
            }
        case .next, .previous:
            // Mopidy moves a stopped house's track without starting it: no start to await, which
            // a change from elsewhere soon after would be taken for (published before it is heard).
            if houseWillPlay(m) { userAsks(m) }
            call(c == .next ? .next : .previous, &fx)
        case .setPosition(let us):
            // The track id was checked against the track heard here; while the server's next
            // one is held back it would seek that one instead (the spec: a stale id does nothing).
            if held.contains(where: { if case .trackPlaybackStarted = $0.event { return true }; return false }) {
                fx.append(.log(.info, "seek: ignored, the track is changing"))
                break
            }
            call(.seek(ms: Int(us / 1000)), &fx)
        case .openURI(let uri):
            userAsks(m)
            call(.open(uri: uri), &fx)
            if hasStream { fx.append(.stream(.play)) }
        case .setVolume(let v):
            if config.volume == .local && hasStream {
                fx.append(.stream(.volume(v)))
                local.volume = v
            } else {
                let level = Int((v * 100).rounded())
                // A muted house shows 0: any level above it is heard, so it unmutes first.
                if server.muted && level > 0 { call(.setMute(false), &fx) }
                call(.setVolume(level), &fx)
            }
        case .setLoopStatus(let s): call(.setLoop(s), &fx)
        case .setShuffle(let on): call(.setRandom(on), &fx)
        case .raise: fx.append(.openWebInterface)
        case .quit: fx.append(.quit)
        case .addTrack(let uri, let after, let play):
            if play { userAsks(m) }
            call(.addTrack(uri: uri, afterTlid: after, play: play), &fx)
        case .removeTrack(let tlid):
            call(.removeTrack(tlid: tlid), &fx)
        case .goTo(let tlid):
            userAsks(m)
            call(.goTo(tlid: tlid), &fx)
        case .wantCovers(let tlids):
            let tracks = server.tracklist.filter { tlids.contains($0.tlid) }.map(\.track)
                .filter { server.covers[$0.uri] == nil && !coversAsked.contains($0.uri) }
            guard !tracks.isEmpty else { break }
            if coversAsked.count >= BridgeTuning.trackListCovers { coversAsked = [] }
            coversAsked.formUnion(tracks.map(\.uri))
            fx.append(.fetchCovers(tracks))
        case .activatePlaylist(let uri):
            // With control = local too: replacing what the house plays is what was asked for.
            userAsks(m)
            call(.activatePlaylist(uri: uri), &fx)
        }
    }

    /// Whether the house plays, or is about to because of a command here, so that Next or
    /// Previous starts a track: not stopped as Mopidy last said it, or a Play here still
    /// awaiting its start; not within the window of a Stop here that Mopidy has not told yet.
    func houseWillPlay(_ m: Moment) -> Bool {
        func recent(_ at: Int?) -> Bool { at.map { m.nowMs.subtracting(saturating: $0) < BridgeTuning.userCommandWindowMs } ?? false }
        if recent(stopAskedAtMs) && houseStateNewest != .stopped { return false }
        return houseStateNewest != .stopped || (userAskedStarts > 0 && recent(userAskedAtMs))
    }

    /// A command here that starts a track: the start it causes is shown at once (`route`).
    mutating func userAsks(_ m: Moment) {
        let open = userAskedAtMs.map { m.nowMs.subtracting(saturating: $0) < BridgeTuning.userCommandWindowMs } ?? false
        userAskedStarts = open ? min(userAskedStarts + 1, BridgeTuning.maxUserStarts) : 1
        userAskedAtMs = m.nowMs
    }

    /// A command's call to Mopidy: while it is unreachable, ignored with a log line; while too
    /// many are unanswered, dropped with one; a newer volume or seek waits for the one under way
    /// and replaces any other waiting.
    mutating func call(_ c: MopidyCall, _ fx: inout [Effect]) {
        guard server.synced else { return refuse(c, "Mopidy is not connected; ignored", &fx) }
        if let kind = c.latestWins, latestInFlight.contains(kind) {
            latestWaiting[kind] = c
            return
        }
        guard commandsInFlight < BridgeTuning.maxCommandsInFlight else {
            return refuse(c, "Mopidy has \(commandsInFlight) commands unanswered; dropped", &fx)
        }
        commandsRefused = 0
        commandsInFlight += 1
        if let kind = c.latestWins { latestInFlight.insert(kind) }
        fx.append(.call(c))
    }

    /// A command not sent, said in the log on the 1st, 2nd, 4th, 8th … in a row (a client
    /// flooding a server that is gone must not flood the journal too).
    private mutating func refuse(_ c: MopidyCall, _ why: String, _ fx: inout [Effect]) {
        commandsRefused = commandsRefused.adding(saturating: 1)
        guard commandsRefused & (commandsRefused - 1) == 0 else { return }
        fx.append(.log(.warning, "\(c.name): \(why)" + (commandsRefused > 1 ? " (\(commandsRefused) in a row)" : "")))
    }

    /// A command's call was answered (or failed): the next waiting one of its kind goes.
    mutating func answered(_ c: MopidyCall, _ fx: inout [Effect]) {
        guard c.isCommand else { return }
        commandsInFlight = max(0, commandsInFlight - 1)
        guard let kind = c.latestWins else { return }
        latestInFlight.remove(kind)
        if let next = latestWaiting.removeValue(forKey: kind) { call(next, &fx) }
    }

    mutating func reload(_ new: Config, _ m: Moment, _ fx: inout [Effect]) {
        // Leaving volume = local: this computer's gain goes back to full, Mopidy's mixer rules.
        if config.volume == .local && new.volume != .local && local.volume != 1 {
            local.volume = 1
            if hasStream { fx.append(.stream(.volume(1))) }
        }
        // Another `server_delay_ms`: the server's delay is learned again from it, from now on.
        if new.serverDelayMs != config.serverDelayMs { learner = ServerDelayLearner(startMs: new.serverDelayMs, atMs: m.nowMs) }
        let watch = new.heardSync && new.heardSyncLearn
        if hasStream && watch != (config.heardSync && config.heardSyncLearn) { fx.append(.stream(.watchBoundaries(watch))) }
        config = new
        local.volumeMode = new.volume
        // A change the stream sees reconnects it (keep_warm alone applies as it is); a reload
        // while it is failed tries again at once (the server may have been fixed); not, say, a
        // new server_delay_ms while it plays.
        if let old = streamConfig, let next = streamConfig(of: link.route) {
            if next != old {
                streamConfig = next
                fx.append(.stream(.configure(next)))
            }
            if case .failed? = local.stream { fx.append(.stream(.retryNow)) }
        }
        fx.append(.log(.info, "configuration reloaded: \(new)"))
    }
}
