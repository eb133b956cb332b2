import Mopidy
import Support

/// Bringing the copy of Mopidy's state up to date: a whole resync after the events socket
/// (re)connects, with what arrives meanwhile deferred, and single refreshes, one in flight each.
extension BridgeState {
    /// The tracklist is fetched once its changes settled (see `BridgeTuning.trackListSettleMs`).
    mutating func settleTracklist(_ m: Moment) {
        if tracklistAtMs == nil { tracklistAtMs = m.nowMs.adding(saturating: BridgeTuning.trackListSettleMs) }
    }

    mutating func resync(_ fx: inout [Effect]) {
        syncing = true
        resyncAgain = false
        deferred = []
        resyncGeneration = resyncGeneration.adding(saturating: 1)
        fx.append(.call(.resync(generation: resyncGeneration)))
    }

    /// The fetch is over (or will not come): what arrived meanwhile applies on top, in order; if
    /// more arrived than is kept, a new fetch instead.
    mutating func endSync(_ m: Moment, _ fx: inout [Effect]) {
        syncing = false
        if resyncAgain && eventsConnected { return resync(&fx) }
        let waiting = deferred
        deferred = []
        for e in waiting { route(e, m, replayed: true, &fx) }
    }

    mutating func refresh(_ r: Refresh, _ fx: inout [Effect]) {
        guard !refreshing.contains(r) else {
            refreshAgain.insert(r)
            return
        }
        refreshing.insert(r)
        switch r {
        case .neighbours: fx.append(.call(.refreshNeighbours))
        case .options: fx.append(.call(.refreshOptions))
        case .mixer: fx.append(.call(.refreshMixer))
        case .tracklist: fx.append(.call(.refreshTracklist))
        case .playlists: fx.append(.call(.refreshPlaylists))
        }
    }

    mutating func refreshed(_ r: Refresh, _ fx: inout [Effect]) {
        refreshing.remove(r)
        if refreshAgain.remove(r) != nil { refresh(r, &fx) }
    }
}
