/// Mopidy's models as the bridge needs them, decoded leniently: a missing or mistyped field
/// becomes nil, never a failure of the whole track.

public struct Track: Equatable, Sendable {
    public var uri: String
    public var name: String?
    public var artists: [String]
    public var album: String?
    public var albumArtists: [String]
    public var genre: String?
    public var trackNumber: Int?
    public var discNumber: Int?
    public var date: String?
    /// Mopidy speaks milliseconds.
    public var lengthMs: Int?

    public init(uri: String, name: String? = nil, artists: [String] = [], album: String? = nil,
                albumArtists: [String] = [], genre: String? = nil, trackNumber: Int? = nil,
                discNumber: Int? = nil, date: String? = nil, lengthMs: Int? = nil)
    {
        self.uri = uri; self.name = name; self.artists = artists; self.album = album
        self.albumArtists = albumArtists; self.genre = genre; self.trackNumber = trackNumber
        self.discNumber = discNumber; self.date = date; self.lengthMs = lengthMs
    }

    /// nil when `json` is not a track object with a URI.
    public init?(json: JSON) {
        guard let uri = json["uri"]?.string else { return nil }
        self.uri = uri
        name = json["name"]?.string
        artists = Track.names(json["artists"])
        album = json["album"]?["name"]?.string
        albumArtists = Track.names(json["album"]?["artists"])
        genre = json["genre"]?.string
        trackNumber = json["track_no"]?.int
        discNumber = json["disc_no"]?.int
        date = json["date"]?.string ?? json["album"]?["date"]?.string
        if let ms = json["length"]?.int, ms > 0 { lengthMs = ms } else { lengthMs = nil }
    }

    /// Artist names in the order Mopidy gives them; order is not stable across backends, so
    /// equality of tracks compares what a listener sees, which is this order.
    static func names(_ j: JSON?) -> [String] {
        (j?.array ?? []).compactMap { $0["name"]?.string }.filter { !$0.isEmpty }
    }
}

public struct TlTrack: Equatable, Sendable {
    public var tlid: Int
    public var track: Track

    public init(tlid: Int, track: Track) {
        self.tlid = tlid
        self.track = track
    }

    public init?(json: JSON) {
        guard let tlid = json["tlid"]?.int, let t = json["track"], let track = Track(json: t) else { return nil }
        self.init(tlid: tlid, track: track)
    }
}

public enum PlaybackState: String, Equatable, Sendable {
    case playing, paused, stopped
}

public struct Image: Equatable, Sendable {
    public var uri: String
    public var width: Int?
    public var height: Int?

    public init(uri: String, width: Int? = nil, height: Int? = nil) {
        self.uri = uri; self.width = width; self.height = height
    }
}

/// Mopidy core events (mopidy.core.CoreListener), decoded from the WebSocket.
public enum MopidyEvent: Equatable, Sendable {
    case trackPlaybackStarted(TlTrack)
    case trackPlaybackPaused(TlTrack?, positionMs: Int)
    case trackPlaybackResumed(TlTrack?, positionMs: Int)
    case trackPlaybackEnded(TlTrack?, positionMs: Int)
    case playbackStateChanged(old: PlaybackState?, new: PlaybackState)
    case tracklistChanged
    case optionsChanged
    case volumeChanged(Int)
    case muteChanged(Bool)
    case seeked(positionMs: Int)
    case streamTitleChanged(String)
    case playlistsLoaded
    case playlistChanged
    /// A well-formed event this client does not use; logged at debug and ignored.
    case other(String)
}

public enum EventDecodingError: Error, Equatable, CustomStringConvertible, Sendable {
    case notJSON(JSONError)
    case notAnEvent
    case malformed(event: String, field: String)

    public var description: String {
        switch self {
        case .notJSON(let e): return "message is not JSON (\(e))"
        case .notAnEvent: return "message is neither an event nor a JSON-RPC reply"
        case .malformed(let ev, let field): return "event \(ev) has a missing or mistyped '\(field)'"
        }
    }
}

extension MopidyEvent {
    /// Decodes one WebSocket message. Returns nil for JSON-RPC replies (Mopidy's socket carries
    /// those too, for calls made over it).
    public static func decode(_ text: String) throws(EventDecodingError) -> MopidyEvent? {
        let json: JSON
        do throws(JSONError) { json = try JSON.parse(text) } catch { throw .notJSON(error) }
        return try decode(json)
    }

    public static func decode(_ json: JSON) throws(EventDecodingError) -> MopidyEvent? {
        guard let name = json["event"]?.string else {
            if json["jsonrpc"] != nil { return nil }
            throw .notAnEvent
        }
        func tl() -> TlTrack? { json["tl_track"].flatMap(TlTrack.init(json:)) }
        func position() -> Int { max(0, json["time_position"]?.int ?? 0) }
        switch name {
        case "track_playback_started":
            guard let t = tl() else { throw .malformed(event: name, field: "tl_track") }
            return .trackPlaybackStarted(t)
        case "track_playback_paused": return .trackPlaybackPaused(tl(), positionMs: position())
        case "track_playback_resumed": return .trackPlaybackResumed(tl(), positionMs: position())
        case "track_playback_ended": return .trackPlaybackEnded(tl(), positionMs: position())
        case "playback_state_changed":
            guard let new = json["new_state"]?.string.flatMap(PlaybackState.init(rawValue:)) else {
                throw .malformed(event: name, field: "new_state")
            }
            return .playbackStateChanged(old: json["old_state"]?.string.flatMap(PlaybackState.init(rawValue:)), new: new)
        case "tracklist_changed": return .tracklistChanged
        case "options_changed": return .optionsChanged
        case "volume_changed":
            guard let v = json["volume"]?.int else { throw .malformed(event: name, field: "volume") }
            return .volumeChanged(min(100, max(0, v)))
        case "mute_changed":
            guard let m = json["mute"]?.bool else { throw .malformed(event: name, field: "mute") }
            return .muteChanged(m)
        case "seeked":
            guard let p = json["time_position"]?.int else { throw .malformed(event: name, field: "time_position") }
            return .seeked(positionMs: max(0, p))
        case "stream_title_changed":
            guard let t = json["title"]?.string else { throw .malformed(event: name, field: "title") }
            return .streamTitleChanged(t)
        case "playlists_loaded": return .playlistsLoaded
        case "playlist_changed": return .playlistChanged
        default: return .other(name)
        }
    }
}
