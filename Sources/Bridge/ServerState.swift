import MPRIS
import Mopidy

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

    public init() {}

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

    public func playerState() -> PlayerState {
        var p = PlayerState()
        p.playbackStatus = switch state {
        case .playing: .playing
        case .paused: .paused
        case .stopped: .stopped
        }
        p.loopStatus = loopStatus
        p.shuffle = random
        p.volume = Double(volume ?? 100) / 100
        p.positionUs = Int64(positionMs) * 1000
        p.positionAnchorUs = positionAnchorUs
        if let tl = current {
            let t = tl.track
            p.metadata = TrackMetadata(
                trackID: TrackMetadata.trackID(tlid: tl.tlid),
                lengthUs: t.lengthMs.map { Int64($0) * 1000 },
                artURL: artURL, title: streamTitle ?? t.name, artists: t.artists, album: t.album,
                albumArtists: t.albumArtists, trackNumber: t.trackNumber, discNumber: t.discNumber,
                genres: t.genre.map { [$0] } ?? [], url: t.uri, date: t.date)
        }
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
