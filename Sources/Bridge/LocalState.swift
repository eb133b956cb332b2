import Audio
import DBus
import MPRIS
import Mopidy
import Support

/// What the bridge knows of this computer, as one value beside the house's (`ServerState`): its
/// stream, its volume, Stop pressed here, sleep, what was last heard, and whether a window can
/// be raised. `playerState(_:_:)` reads both.
public struct LocalState: Equatable, Sendable {
    /// This computer's stream; nil when no stream is configured (then Mopidy's state is shown).
    public var stream: StreamStatus? = nil
    /// This computer's gain, 0.0–1.0 (`volume = local`).
    public var volume = 1.0
    /// Which volume MPRIS shows and sets: Mopidy's mixer or this computer's gain.
    public var volumeMode: VolumeMode = .server
    /// Stop was pressed here (and Play not since): Stopped, position 0, whatever the house does.
    public var stopPressed = false
    /// The machine sleeps (logind): nobody hears anything here, and no route is probed.
    public var asleep = false
    /// This computer listened when sleep came: it listens again on wake.
    var resumeOnWake = false
    /// The position shown while nothing is heard here but the house plays: where listening
    /// stopped (what was last heard), not the house's running position. It stands still, except
    /// from `sinceUs` while the stream is on its way (Playing, not yet heard), where consumers
    /// extrapolate it.
    public var frozen: Frozen? = nil
    /// A web interface can be opened (MPRIS's CanRaise).
    public var canRaise = false

    public struct Frozen: Equatable, Sendable {
        public var positionMs: Int
        public var sinceUs: Int64
    }

    public init() {}

    /// The stream is trying to play (playing, or on its way back to it).
    var streamActive: Bool {
        switch stream {
        case .playing?, .buffering?, .connecting?, .reconnecting?: return true
        default: return false
        }
    }

    /// The house's audio is heard here now (or, without a stream of our own, the house plays):
    /// only then does the published position move.
    func hears(_ server: ServerState) -> Bool {
        guard server.state == .playing, !stopPressed, !asleep else { return false }
        switch stream {
        case nil, .playing?, .reconnecting?: return true  // reconnecting: buffered audio plays out
        default: return false
        }
    }

    /// What the user hears decides PlaybackStatus: Paused when this computer is not listening
    /// even if the house plays; Paused/Stopped when Mopidy is.
    func status(_ server: ServerState) -> PlaybackStatus {
        if stopPressed { return .stopped }
        if asleep { return .paused }
        let house: PlaybackStatus = switch server.state {
        case .playing: .playing
        case .paused: .paused
        case .stopped: .stopped
        }
        guard let stream else { return server.synced ? house : .stopped }
        // Mopidy unreachable: the stream says what plays, as the house was last known to play
        // (a pause or stop of the house that reached this computer's ears is shown).
        if !server.synced { return stream == .playing ? house : .stopped }
        if house == .playing { return streamActive ? .playing : .paused }
        return house
    }
}

/// What MPRIS publishes. Every published property's value is decided here, from the house's
/// state and this computer's alone (no clock: the position is published with its anchor and
/// advances from there).
public func playerState(_ server: ServerState, _ local: LocalState) -> PlayerState {
    var p = PlayerState()
    p.playbackStatus = local.status(server)
    p.loopStatus = server.loopStatus
    p.shuffle = server.random
    // Whatever arrived, MPRIS's Volume is 0.0–1.0 here (Mopidy's mixer has no gain above 100).
    let here = local.volume.isFinite ? min(1, max(0, local.volume)) : 1
    let house = server.muted ? 0 : min(100, max(0, server.volume ?? 100))
    p.volume = local.volumeMode == .local ? here : Double(house) / 100
    // The position moves only while the music is heard; otherwise it stays where listening
    // stopped. Stopped is at 0 (the spec: Play after Stop starts the track again).
    let hearing = local.hears(server)
    if local.stopPressed || p.playbackStatus == .stopped {
        p.positionUs = 0
    } else if !hearing, let f = local.frozen {
        p.positionUs = Int64(f.positionMs).multiplied(saturating: 1000)
        p.positionAnchorUs = f.sinceUs
        p.positionAdvancing = p.playbackStatus == .playing
    } else {
        p.positionUs = Int64(server.positionMs).multiplied(saturating: 1000)
        p.positionAnchorUs = server.positionAnchorUs
        p.positionAdvancing = hearing
    }
    // While Mopidy is unreachable the last track stays only while its audio still plays.
    let shown = server.synced || local.stream == .playing
    if let tl = server.current, shown {
        p.metadata = ServerState.metadata(tl, artURL: server.artURL, title: server.streamTitle)
    }
    // TrackList: from the current track on (the spec: the tracks to be played), so
    // mpris:trackid is always the first of Tracks.
    // Ids are unique in Tracks (the spec), whatever the server sent.
    if shown {
        let currentID = p.metadata.trackID
        var seen = Set<ObjectPath>()
        let all = server.tracklist.map { tl in
            ServerState.metadata(tl, artURL: server.covers[tl.track.uri].flatMap { $0.isEmpty ? nil : $0 }, title: nil)
        }.filter { seen.insert($0.trackID).inserted }
        let from = all.firstIndex { $0.trackID == currentID } ?? 0
        p.tracklist = all.dropFirst(from).prefix(BridgeTuning.trackListLength).map { $0.trackID == currentID ? p.metadata : $0 }
    }
    p.canEditTracks = server.synced
    p.playlists = server.playlists
    if let a = server.activated, let c = server.current, a.tlids.contains(c.tlid) { p.activePlaylist = a.playlist }
    // With repeat on, Mopidy always has a next/previous track to go to.
    p.canGoNext = server.synced && (server.nextTlid != nil || (server.repeatOn && server.current != nil))
    p.canGoPrevious = server.synced && (server.previousTlid != nil || (server.repeatOn && server.current != nil))
    p.canPlay = true
    p.canPause = true
    p.canSeek = server.synced && server.current?.track.lengthMs != nil
    p.canRaise = local.canRaise
    p.supportedUriSchemes = server.uriSchemes
    return p
}
