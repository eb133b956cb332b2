import Audio
import MPRIS
import Mopidy
import Support

extension BridgeState {
    /// The one place the bridge's state changes: takes one input at one moment and returns the
    /// work to do, in order. Performs nothing itself — no I/O, no clock, no locks — so every
    /// sequence of inputs can be replayed in a test. Total: every input has an answer.
    public mutating func reduce(_ input: Input, at m: Moment) -> [Effect] {
        var fx: [Effect] = []
        retimeHeld(m)
        releaseDue(m, &fx)
        // Deadlines are kept on every input, not only on `.due`: a steady flow of inputs (a burst
        // of events) must not starve them.
        if let at = resyncAtMs, at <= m.nowMs {
            // A fetch shows the house as it is now: it waits for what is still held to be heard.
            if !held.isEmpty {
                resyncAtMs = max(lastDueMs, m.nowMs.adding(saturating: 1))
            } else {
                resyncAtMs = nil
                if eventsConnected && !syncing { resync(&fx) }
            }
        }
        if let at = tracklistAtMs, at <= m.nowMs {
            tracklistAtMs = nil
            refresh(.tracklist, &fx)
        }
        routeDue(m, &fx)
        followSignIn(input, &fx)
        switch input {
        case .eventsConnected(let url):
            eventsConnected = true
            commandsRefused = 0
            useLayout(answeringAt: url, &fx)
            resync(&fx)
            // The server is back: the stream need not wait for its next attempt.
            if local.stream?.isWaitingToRetry == true { fx.append(.stream(.retryNow)) }
        case .eventsDisconnected(let reason):
            eventsConnected = false
            commandsRefused = 0
            lastError = reason.message
            eventReconnects = eventReconnects.adding(saturating: 1)
            resyncAtMs = nil
            endSync(m, &fx)
            // What plays on is what this computer still hears (LocalState.status): the house's
            // position runs on with it, as consumers extrapolate it.
            server.synced = false
        case .event(let e):
            if !syncing {
                route(e, m, &fx)
            } else if deferred.count < BridgeTuning.maxDeferredEvents {
                deferred.append(e)
            } else {
                // Too much happened during the fetch to replay it: fetch again once it is in.
                deferred = []
                resyncAgain = true
            }
        case .reply(let r):
            reply(r, m, &fx)
        case .streamStatus(let s, let sequence):
            guard sequence > streamSequence else { break }
            streamSequence = sequence
            streamStatus(s, m)
        case .command(let c):
            if local.asleep, c == .play { awakeByUser() }
            command(c, m, &fx)
        case .started:
            guard hasStream else { break }
            fx.append(.stream(.watchBoundaries(config.heardSync && config.heardSyncLearn)))
            if config.autoplay { fx.append(.stream(.play)) }
        case .reload(let new):
            reload(new, m, &fx)
        case .coverReady(let uri, let file):
            if server.covers.count >= BridgeTuning.trackListCovers {
                // Keep those of the list as it is; the others go.
                let listed = Set(server.tracklist.map(\.track.uri))
                server.covers = server.covers.filter { listed.contains($0.key) }
                if server.covers.count >= BridgeTuning.trackListCovers { server.covers = [:] }
            }
            server.covers[uri] = file ?? ""
        case .artReady(let uri, let file):
            guard let track = server.current?.track, track.uri == uri else { break }
            if let file { server.artURL = file }
            if config.notify { fx.append(.notify(track, artFile: file)) }
        case .due:
            break  // what is due was done above
        case .streamDelayFell(let from, let to):
            // Timed again and released above, by the moment's new measure.
            if !held.isEmpty { fx.append(.log(.debug, "heard-now: the stream's delay fell \(from) → \(to) ms; held changes timed again")) }
        case .sleeping(let on):
            sleeping(on, m, &fx)
        case .network(let n):
            network(n, m, &fx)
        case .probed(let r, let answered, let detail):
            probed(r, answered: answered, detail: detail, m, &fx)
        case .boundaryHeard(let b): learn(b, m, &fx)
        case .streamChangeHeardLater(let onTime, let later): heardLater(onTimeMs: onTime, laterMs: later, m, &fx)
        }
        followRoute(m, &fx)
        freezeOrRelease(m)
        publish(m, &fx)
        followHouseSilence(m, &fx)
        return fx
    }

    // MARK: - Mopidy's replies

    mutating func reply(_ r: Reply, _ m: Moment, _ fx: inout [Effect]) {
        switch r {
        case .synced(let s):
            // Only the answer to the newest fetch, while the events it goes with still flow.
            guard s.generation == resyncGeneration, eventsConnected else { break }
            let before = server.current
            server.synced = true
            server.setCurrent(s.current)
            if before?.tlid != s.current?.tlid { trackChanged(m) }
            server.state = s.state
            // The position heard here trails the server's by the stream delay.
            anchorHeard(s.positionMs, m)
            server.volume = s.volume
            server.muted = s.muted
            server.repeatOn = s.repeatOn; server.single = s.single; server.random = s.random
            server.nextTlid = s.nextTlid; server.previousTlid = s.previousTlid
            server.uriSchemes = s.uriSchemes
            // The snapshot is newer than anything held back.
            held.removeAll()
            lastDueMs = 0
            fx.append(.log(.info, "Mopidy at \(s.rpcURL): \(describe(s.current?.track)) [\(s.state.rawValue)]"))
            if let tl = s.current, tl.track.uri != before?.track.uri || server.artURL == nil { fx.append(.fetchArt(tl.track)) }
            refresh(.tracklist, &fx)
            refresh(.playlists, &fx)
            endSync(m, &fx)
        case .neighbours(let next, let previous):
            server.nextTlid = next
            server.previousTlid = previous
            refreshed(.neighbours, &fx)
        case .options(let r, let single, let random):
            server.repeatOn = r; server.single = single; server.random = random
            refreshed(.options, &fx)
        case .mixer(let volume, let muted):
            // A reading older than a mixer event since counts not: the next one is asked for.
            if !refreshAgain.contains(.mixer) {
                server.volume = volume
                server.muted = muted
            }
            refreshed(.mixer, &fx)
        case .tracklist(let list):
            server.tracklist = list
            refreshed(.tracklist, &fx)
        case .playlists(let list):
            server.playlists = list
            refreshed(.playlists, &fx)
        case .activated(let uri, let tlids):
            let playlist = server.playlists.first { $0.uri == uri } ?? PlaylistInfo(uri: uri, name: uri)
            server.activated = .init(playlist: playlist, tlids: Set(tlids))
            answered(.activatePlaylist(uri: uri), &fx)
        case .done(let c):
            answered(c, &fx)
            // Mopidy moves to another track without an event while it is stopped (its `_change`
            // for a stopped house): fetch what it has now — once a stop still held back is heard,
            // so the fetch does not show it before the music ends here.
            if c.changesTrack, houseStateNewest != .playing, eventsConnected {
                if !held.isEmpty && lastDueMs > m.nowMs {
                    resyncAtMs = min(resyncAtMs ?? lastDueMs, lastDueMs)
                } else if syncing {
                    resyncAgain = true
                } else {
                    resync(&fx)
                }
            }
        case .failed(let call, let reason):
            answered(call, &fx)
            lastError = reason.message
            fx.append(.log(.warning, "\(call.name): \(reason)"))
            switch call {
            case .resync(let generation):
                guard generation == resyncGeneration else { break }
                endSync(m, &fx)
                if eventsConnected { resyncAtMs = m.nowMs.adding(saturating: BridgeTuning.resyncRetryMs) }
            case .refreshNeighbours: refreshed(.neighbours, &fx)
            case .refreshOptions: refreshed(.options, &fx)
            case .refreshMixer: refreshed(.mixer, &fx)
            case .refreshTracklist: refreshed(.tracklist, &fx)
            case .refreshPlaylists: refreshed(.playlists, &fx)
            default: break
            }
        }
    }
}
