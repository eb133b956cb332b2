import Audio
import DBus
import MPRIS
import Mopidy
import Support

/// What the bridge knows of the Mopidy server, as one value. `playerState` maps it to what MPRIS
/// publishes; both are pure so the mapping is unit-tested without a bus or a server.
public struct ServerState: Equatable, Sendable {
    public var connected = false
    public var current: TlTrack? = nil
    public var state: PlaybackState = .stopped
    /// Position at `positionAnchorUs` (monotonic µs).
    public var positionMs = 0
    public var positionAnchorUs: Int64 = 0
    /// 0–100; nil when Mopidy has no mixer.
    public var volume: Int? = nil
    /// Mopidy's mixer is muted: MPRIS shows Volume 0 (as mopidy-mpris does), whatever the level.
    public var muted = false
    public var repeatOn = false
    public var single = false
    public var random = false
    public var nextTlid: Int? = nil
    public var previousTlid: Int? = nil
    public var uriSchemes: [String] = []
    /// A title from `stream_title_changed` for the current track (radio streams).
    public var streamTitle: String? = nil
    /// The cached cover art of `current` as a file:// URI, once downloaded.
    public var artURL: String? = nil
    public var canRaise = false
    /// This computer's stream; nil when no stream is configured (then Mopidy's state is shown).
    public var localStream: StreamStatus? = nil
    public var localVolume = 1.0
    public var volumeMode: VolumeMode = .server
    /// Stop was pressed here (and Play not since): Stopped, position 0, whatever the house does.
    public var stoppedHere = false
    /// The machine sleeps (logind): nobody hears anything here.
    public var asleep = false
    /// The position shown while nothing is heard here but the house plays: where listening
    /// stopped (what was last heard), not the house's running position. It stands still, except
    /// from `sinceUs` while the stream is on its way (Playing, not yet heard), where consumers
    /// extrapolate it.
    public var frozen: Frozen? = nil
    /// Mopidy's tracklist around the current track: from the one before it (still heard here
    /// while a change is held back) on, at most `BridgeTuning.trackListLength` + 1.
    public var tracklist: [TlTrack] = []
    public var playlists: [PlaylistInfo] = []
    /// Covers of the tracklist's tracks (file:// URIs; "" for none), by track URI, fetched when a
    /// client asked for their metadata; at most `BridgeTuning.trackListCovers`.
    public var covers: [String: String] = [:]
    /// The playlist activated through the bridge, and the tracks it added: it is the active one
    /// while one of those plays.
    public var activated: Activated? = nil

    public struct Activated: Equatable, Sendable {
        public var playlist: PlaylistInfo
        public var tlids: Set<Int>
    }

    public struct Frozen: Equatable, Sendable {
        public var positionMs: Int
        public var sinceUs: Int64
    }

    public init() {}

    /// The local stream is trying to play (playing, or on its way back to it).
    var localActive: Bool {
        switch localStream {
        case .playing?, .buffering?, .connecting?, .reconnecting?: return true
        default: return false
        }
    }

    /// The house's audio is heard here now (or, without a stream of our own, the house plays):
    /// only then does the published position move.
    var hearing: Bool {
        guard state == .playing, !stoppedHere, !asleep else { return false }
        switch localStream {
        case nil, .playing?, .reconnecting?: return true  // reconnecting: buffered audio plays out
        default: return false
        }
    }

    /// What the user hears decides PlaybackStatus: Paused when this computer is not listening
    /// even if the house plays; Paused/Stopped when Mopidy is.
    var status: PlaybackStatus {
        if stoppedHere { return .stopped }
        if asleep { return .paused }
        let server: PlaybackStatus = switch state {
        case .playing: .playing
        case .paused: .paused
        case .stopped: .stopped
        }
        guard let local = localStream else { return connected ? server : .stopped }
        if !connected { return local == .playing ? .playing : .stopped }
        if server == .playing { return localActive ? .playing : .paused }
        return server
    }

    /// Mopidy's position now, from the last known position and the clock.
    func serverPositionMs(nowUs: Int64) -> Int {
        guard state == .playing else { return positionMs }
        return positionMs.adding(saturating: Int(max(0, nowUs.subtracting(saturating: positionAnchorUs)) / 1000))
    }

    /// A new current track. Keeps the artist order already shown when only the order differs:
    /// some backends return artists in no fixed order, and the widget should not flicker.
    public mutating func setCurrent(_ tl: TlTrack?) {
        guard var tl else {
            current = nil; streamTitle = nil; artURL = nil
            return
        }
        if let old = current, old.tlid == tl.tlid, old.track.uri == tl.track.uri {
            if Set(old.track.artists) == Set(tl.track.artists) { tl.track.artists = old.track.artists }
        } else {
            streamTitle = nil
            artURL = nil
        }
        current = tl
    }

    /// LoopStatus ↔ Mopidy's repeat/single: Track = repeat+single, Playlist = repeat only.
    public var loopStatus: LoopStatus {
        guard repeatOn else { return .none }
        return single ? .track : .playlist
    }

    /// What MPRIS publishes. Every published property's value is decided here, from this value
    /// alone (no clock: the position is published with its anchor and advances from there).
    public func playerState() -> PlayerState {
        var p = PlayerState()
        p.playbackStatus = status
        p.loopStatus = loopStatus
        p.shuffle = random
        // Whatever arrived, MPRIS's Volume is 0.0–1.0 here (Mopidy's mixer has no gain above 100).
        let local = localVolume.isFinite ? min(1, max(0, localVolume)) : 1
        let house = muted ? 0 : min(100, max(0, volume ?? 100))
        p.volume = volumeMode == .local ? local : Double(house) / 100
        // The position moves only while the music is heard; otherwise it stays where listening
        // stopped. Stopped is at 0 (the spec: Play after Stop starts the track again).
        if stoppedHere || p.playbackStatus == .stopped {
            p.positionUs = 0
        } else if !hearing, let f = frozen {
            p.positionUs = Int64(f.positionMs).multiplied(saturating: 1000)
            p.positionAnchorUs = f.sinceUs
            p.positionAdvancing = p.playbackStatus == .playing
        } else {
            p.positionUs = Int64(positionMs).multiplied(saturating: 1000)
            p.positionAnchorUs = positionAnchorUs
            p.positionAdvancing = hearing
        }
        // While Mopidy is unreachable the last track stays only while its audio still plays.
        let shown = connected || localStream == .playing
        if let tl = current, shown {
            p.metadata = ServerState.metadata(tl, artURL: artURL, title: streamTitle)
        }
        // TrackList: from the current track on (the spec: the tracks to be played), so
        // mpris:trackid is always the first of Tracks.
        // Ids are unique in Tracks (the spec), whatever the server sent.
        if shown {
            let currentID = p.metadata.trackID
            var seen = Set<ObjectPath>()
            let all = tracklist.map { tl in
                ServerState.metadata(tl, artURL: covers[tl.track.uri].flatMap { $0.isEmpty ? nil : $0 }, title: nil)
            }.filter { seen.insert($0.trackID).inserted }
            let from = all.firstIndex { $0.trackID == currentID } ?? 0
            p.tracklist = all.dropFirst(from).prefix(BridgeTuning.trackListLength).map { $0.trackID == currentID ? p.metadata : $0 }
        }
        p.canEditTracks = connected
        p.playlists = playlists
        if let a = activated, let c = current, a.tlids.contains(c.tlid) { p.activePlaylist = a.playlist }
        // With repeat on, Mopidy always has a next/previous track to go to.
        p.canGoNext = connected && (nextTlid != nil || (repeatOn && current != nil))
        p.canGoPrevious = connected && (previousTlid != nil || (repeatOn && current != nil))
        p.canPlay = true
        p.canPause = true
        p.canSeek = connected && current?.track.lengthMs != nil
        p.canRaise = canRaise
        p.supportedUriSchemes = uriSchemes
        return p
    }
}

extension ServerState {
    static func metadata(_ tl: TlTrack, artURL: String?, title: String?) -> TrackMetadata {
        let t = tl.track
        return TrackMetadata(
            trackID: TrackMetadata.trackID(tlid: tl.tlid),
            lengthUs: t.lengthMs.map { Int64($0).multiplied(saturating: 1000) },
            artURL: artURL, title: title ?? t.name, artists: t.artists, album: t.album,
            albumArtists: t.albumArtists, trackNumber: t.trackNumber, discNumber: t.discNumber,
            genres: t.genre.map { [$0] } ?? [], url: t.uri, date: t.date)
    }
}
