import DBus

public enum PlaybackStatus: String, Sendable {
    case playing = "Playing", paused = "Paused", stopped = "Stopped"
}

public enum LoopStatus: String, Sendable {
    case none = "None", track = "Track", playlist = "Playlist"
}

/// What the player publishes as `Metadata`. MPRIS speaks microseconds.
public struct TrackMetadata: Equatable, Sendable {
    /// `mpris:trackid`: never under /org/mpris except the NoTrack path.
    public var trackID: ObjectPath
    public var lengthUs: Int64?
    public var artURL: String?
    public var title: String?
    public var artists: [String] = []
    public var album: String?
    public var albumArtists: [String] = []
    public var trackNumber: Int?
    public var discNumber: Int?
    public var genres: [String] = []
    public var url: String?
    /// `xesam:contentCreated`, ISO 8601 date or year as Mopidy has it.
    public var date: String?

    public static let noTrackID = ObjectPath("/org/mpris/MediaPlayer2/TrackList/NoTrack")!
    public static let none = TrackMetadata(trackID: noTrackID)

    public init(trackID: ObjectPath, lengthUs: Int64? = nil, artURL: String? = nil, title: String? = nil,
                artists: [String] = [], album: String? = nil, albumArtists: [String] = [],
                trackNumber: Int? = nil, discNumber: Int? = nil, genres: [String] = [],
                url: String? = nil, date: String? = nil)
    {
        self.trackID = trackID; self.lengthUs = lengthUs; self.artURL = artURL; self.title = title
        self.artists = artists; self.album = album; self.albumArtists = albumArtists
        self.trackNumber = trackNumber; self.discNumber = discNumber; self.genres = genres
        self.url = url; self.date = date
    }

    /// The track id for a Mopidy tracklist id: `/io/github/groovebridge/Track/<tlid>`.
    public static func trackID(tlid: Int) -> ObjectPath {
        ObjectPath("/io/github/groovebridge/Track/\(max(0, tlid))")!
    }

    /// `a{sv}` with only the keys that have a value (no empty strings, no broken art).
    public var dbusValue: DBusValue {
        var e: [(String, DBusValue)] = [("mpris:trackid", .objectPath(trackID))]
        if let lengthUs, lengthUs > 0 { e.append(("mpris:length", .int64(lengthUs))) }
        if let artURL, !artURL.isEmpty { e.append(("mpris:artUrl", .string(artURL))) }
        if let title, !title.isEmpty { e.append(("xesam:title", .string(title))) }
        if !artists.isEmpty { e.append(("xesam:artist", .strings(artists))) }
        if let album, !album.isEmpty { e.append(("xesam:album", .string(album))) }
        if !albumArtists.isEmpty { e.append(("xesam:albumArtist", .strings(albumArtists))) }
        if let trackNumber, trackNumber > 0 { e.append(("xesam:trackNumber", .int32(Int32(clamping: trackNumber)))) }
        if let discNumber, discNumber > 0 { e.append(("xesam:discNumber", .int32(Int32(clamping: discNumber)))) }
        if !genres.isEmpty { e.append(("xesam:genre", .strings(genres))) }
        if let url, !url.isEmpty { e.append(("xesam:url", .string(url))) }
        if let date, !date.isEmpty { e.append(("xesam:contentCreated", .string(date))) }
        return .vardict(e)
    }
}

/// Everything the MPRIS object publishes, as one value. The service diffs two of these to know
/// which properties changed (the reducer pattern: state in, changed property names out).
public struct PlayerState: Equatable, Sendable {
    public var playbackStatus: PlaybackStatus = .stopped
    public var loopStatus: LoopStatus = .none
    public var shuffle = false
    public var metadata: TrackMetadata = .none
    /// 0.0–1.0
    public var volume: Double = 1.0
    /// Position at `positionAnchorUs` (monotonic µs), advancing while playing.
    public var positionUs: Int64 = 0
    public var positionAnchorUs: Int64 = 0
    public var canGoNext = false
    public var canGoPrevious = false
    public var canPlay = true
    public var canPause = true
    public var canSeek = false
    public var canRaise = false
    public var hasTrackList = false
    public var supportedUriSchemes: [String] = []
    public var supportedMimeTypes: [String] = ["audio/flac", "audio/ogg", "audio/x-flac"]

    public init() {}

    /// The position now: the last known position plus the time since, while playing, never past
    /// the track's end.
    public func position(nowUs: Int64) -> Int64 {
        var p = positionUs
        if playbackStatus == .playing { p += max(0, nowUs - positionAnchorUs) }
        if let len = metadata.lengthUs, len > 0 { p = min(p, len) }
        return max(0, p)
    }
}

public enum MPRISInterface {
    public static let root = "org.mpris.MediaPlayer2"
    public static let player = "org.mpris.MediaPlayer2.Player"
    public static let properties = "org.freedesktop.DBus.Properties"
    public static let introspectable = "org.freedesktop.DBus.Introspectable"
    public static let peer = "org.freedesktop.DBus.Peer"
    public static let objectPath = "/org/mpris/MediaPlayer2"
}

extension PlayerState {
    public static let identity = "Groove Audio"
    public static let desktopEntry = "groove-bridge"

    /// Root properties, in introspection order.
    public func rootProperties() -> [(String, DBusValue)] {
        [("CanQuit", .bool(true)),
         ("Fullscreen", .bool(false)),
         ("CanSetFullscreen", .bool(false)),
         ("CanRaise", .bool(canRaise)),
         ("HasTrackList", .bool(hasTrackList)),
         ("Identity", .string(PlayerState.identity)),
         ("DesktopEntry", .string(PlayerState.desktopEntry)),
         ("SupportedUriSchemes", .strings(supportedUriSchemes)),
         ("SupportedMimeTypes", .strings(supportedMimeTypes))]
    }

    /// Player properties, in introspection order. Position is computed at `nowUs`.
    public func playerProperties(nowUs: Int64) -> [(String, DBusValue)] {
        [("PlaybackStatus", .string(playbackStatus.rawValue)),
         ("LoopStatus", .string(loopStatus.rawValue)),
         ("Rate", .double(1.0)),
         ("Shuffle", .bool(shuffle)),
         ("Metadata", metadata.dbusValue),
         ("Volume", .double(volume)),
         ("Position", .int64(position(nowUs: nowUs))),
         ("MinimumRate", .double(1.0)),
         ("MaximumRate", .double(1.0)),
         ("CanGoNext", .bool(canGoNext)),
         ("CanGoPrevious", .bool(canGoPrevious)),
         ("CanPlay", .bool(canPlay)),
         ("CanPause", .bool(canPause)),
         ("CanSeek", .bool(canSeek)),
         ("CanControl", .bool(true))]
    }

    public func properties(of interface: String, nowUs: Int64) -> [(String, DBusValue)]? {
        switch interface {
        case MPRISInterface.root: return rootProperties()
        case MPRISInterface.player: return playerProperties(nowUs: nowUs)
        default: return nil
        }
    }

    /// Properties never sent in PropertiesChanged (the introspection says EmitsChangedSignal=false).
    static let silent: Set<String> = ["Position", "CanControl"]

    /// What changed from `old` to `self`, per interface, without Position and CanControl.
    public func changes(since old: PlayerState) -> [(interface: String, changed: [(String, DBusValue)])] {
        var out: [(String, [(String, DBusValue)])] = []
        for iface in [MPRISInterface.root, MPRISInterface.player] {
            let a = old.properties(of: iface, nowUs: 0)!, b = properties(of: iface, nowUs: 0)!
            let changed = zip(a, b).filter { !PlayerState.silent.contains($0.1.0) && $0.0.1 != $0.1.1 }.map(\.1)
            if !changed.isEmpty { out.append((iface, changed)) }
        }
        return out
    }
}
