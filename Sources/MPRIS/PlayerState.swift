import DBus
import Support

public enum PlaybackStatus: String, Sendable {
    case playing = "Playing", paused = "Paused", stopped = "Stopped"
}

public enum LoopStatus: String, Sendable {
    case none = "None", track = "Track", playlist = "Playlist"
}

/// What the player publishes as `Metadata`. MPRIS speaks microseconds.
public struct TrackMetadata: Equatable, Sendable {
    /// `mpris:trackid`: never under /org/mpris; the NoTrack path stands for "no track".
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

    /// `a{sv}` with only the keys that have a value (no empty strings, no broken art); empty
    /// when there is no track (the spec: "no metadata", not the NoTrack id, which mpristester
    /// flags).
    public var dbusValue: DBusValue {
        guard trackID != TrackMetadata.noTrackID else { return .vardict([]) }
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
    /// Position at `positionAnchorUs` (monotonic µs), advancing from there while
    /// `positionAdvancing`.
    public var positionUs: Int64 = 0
    public var positionAnchorUs: Int64 = 0
    public var positionAdvancing = false
    public var canGoNext = false
    public var canGoPrevious = false
    public var canPlay = true
    public var canPause = true
    public var canSeek = false
    public var canRaise = false
    public var hasTrackList = true
    /// TrackList's tracks, from the current one on (their ids are `Tracks`).
    public var tracklist: [TrackMetadata] = []
    public var canEditTracks = false
    public var playlists: [PlaylistInfo] = []
    /// The playlist activated through the bridge while its tracks are what plays.
    public var activePlaylist: PlaylistInfo? = nil
    public var supportedUriSchemes: [String] = []
    public var supportedMimeTypes: [String] = ["audio/flac", "audio/ogg", "audio/x-flac"]

    public init() {}

    /// The position now: the last known position plus the time since, while it advances, never
    /// past the track's end.
    public func position(nowUs: Int64) -> Int64 {
        var p = positionUs
        if positionAdvancing { p = p.adding(saturating: max(0, nowUs.subtracting(saturating: positionAnchorUs))) }
        if let len = metadata.lengthUs, len > 0 { p = min(p, len) }
        return max(0, p)
    }
}


/// The orderings GetPlaylists honours, by the spec's values: Mopidy keeps its playlists in an
/// order of its own (`User`) and each has a name (`Alphabetical`); it keeps no dates.
public enum PlaylistOrder: String, CaseIterable, Sendable {
    case alphabetical = "Alphabetical", user = "User"
}

/// A playlist as MPRIS shows it: `(oss)`, id, name and icon. The id is made from the playlist's
/// URI, so it stays the same across restarts and renames.
public struct PlaylistInfo: Equatable, Sendable {
    public var id: ObjectPath
    public var name: String
    public var uri: String

    public init(uri: String, name: String) {
        self.uri = uri
        self.name = name
        id = PlaylistInfo.id(forURI: uri)
    }

    /// The "no playlist" value the spec asks for in ActivePlaylist: id "/".
    static let invalid = PlaylistInfo(id: ObjectPath("/")!, name: "", uri: "")

    private init(id: ObjectPath, name: String, uri: String) {
        self.id = id; self.name = name; self.uri = uri
    }

    /// `/io/github/groovebridge/Playlist/<the URI in base32, without padding>` (object path
    /// elements allow only [A-Za-z0-9_]).
    public static func id(forURI uri: String) -> ObjectPath {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
        var out = "", acc: UInt32 = 0, bits = 0
        for byte in uri.utf8 {
            acc = acc << 8 | UInt32(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                out.append(alphabet[Int(acc >> UInt32(bits) & 31)])
            }
            acc &= (1 << UInt32(bits)) - 1
        }
        if bits > 0 { out.append(alphabet[Int(acc << UInt32(5 - bits) & 31)]) }
        return ObjectPath("/io/github/groovebridge/Playlist/" + (out.isEmpty ? "_" : out))!
    }

    var dbusValue: DBusValue { .structure([.objectPath(id), .string(name), .string("")]) }
}

extension TrackMetadata {
    /// The Mopidy tracklist id in a track id of ours, or nil for any other path.
    public static func tlid(of id: ObjectPath) -> Int? {
        let prefix = "/io/github/groovebridge/Track/"
        guard id.rawValue.hasPrefix(prefix) else { return nil }
        return Int(id.rawValue.dropFirst(prefix.count))
    }
}
