import MPRIS
import Mopidy
import Support

/// What the bridge knows of the Mopidy server (the house), as one value: Mopidy's facts only;
/// this computer's are `LocalState`. `playerState(_:_:)` maps the two to what MPRIS publishes;
/// all three are pure so the mapping is unit-tested without a bus or a server.
public struct ServerState: Equatable, Sendable {
    /// Mopidy's state is known: a full fetch answered while its events flow, and they still do.
    public var synced = false
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

    public init() {}

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
