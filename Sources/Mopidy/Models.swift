// The fuzz build (scripts/fuzz) compiles these files with Support's into one module.
#if canImport(Support)
import Support
#endif

/// Mopidy's models as the bridge needs them, decoded leniently: a missing or mistyped field
/// becomes nil, never a failure of the whole track. Numbers are taken only inside the ranges of
/// `ServerRange` (else dropped or clamped, with a log line).

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
        trackNumber = json["track_no"].intWithin(ServerRange.trackNumber, "track number of \(uri)")
        discNumber = json["disc_no"].intWithin(ServerRange.trackNumber, "disc number of \(uri)")
        date = json["date"]?.string ?? json["album"]?["date"]?.string
        // 0 is how some backends say "unknown" (streams): no length, and nothing to log.
        let length = json["length"]
        lengthMs = length?.int == 0 ? nil : length.intWithin(ServerRange.lengthMs, "track length (ms) of \(uri)")
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
        guard let t = json["track"], let track = Track(json: t),
              let tlid = json["tlid"].intWithin(ServerRange.tlid, "tlid of \(track.uri)") else { return nil }
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

    /// Pixels, for picking the largest; an unknown side counts as 0. Saturates: the sides are
    /// checked where they are decoded, but an Image can be made with any.
    var area: Int { (width ?? 0).multiplied(saturating: height ?? 0) }
}

extension Image {
    /// The images of `uri` in a `core.library.get_images` result, largest first; sides outside
    /// `ServerRange.imageSide` count as unknown.
    static func list(_ result: JSON, for uri: String) -> [Image] {
        let list = (result[uri]?.array ?? []).compactMap { j -> Image? in
            guard let u = j["uri"]?.string, !u.isEmpty else { return nil }
            return Image(uri: u, width: j["width"].intWithin(ServerRange.imageSide, "image width of \(u)"),
                         height: j["height"].intWithin(ServerRange.imageSide, "image height of \(u)"))
        }
        return list.sorted { $0.area > $1.area }
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
    case playlistDeleted
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
        do throws(JSONError) {
            json = try JSON.parse(text, maxTreeBytes: MopidyLimits.treeBytes, maxArrayElements: MopidyLimits.listElements)
        } catch {
            throw .notJSON(error)
        }
        return try decode(json)
    }

    public static func decode(_ json: JSON) throws(EventDecodingError) -> MopidyEvent? {
        guard let name = json["event"]?.string else {
            if json["jsonrpc"] != nil { return nil }
            throw .notAnEvent
        }
        func tl() -> TlTrack? { json["tl_track"].flatMap(TlTrack.init(json:)) }
        func position() -> Int { json["time_position"].clampedInt(ServerRange.positionMs, "\(name)'s time_position") ?? 0 }
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
            return .volumeChanged(ServerRange.clamp(v, ServerRange.volume, "\(name)'s volume"))
        case "mute_changed":
            guard let m = json["mute"]?.bool else { throw .malformed(event: name, field: "mute") }
            return .muteChanged(m)
        case "seeked":
            guard let p = json["time_position"]?.int else { throw .malformed(event: name, field: "time_position") }
            return .seeked(positionMs: ServerRange.clamp(p, ServerRange.positionMs, "\(name)'s time_position"))
        case "stream_title_changed":
            guard let t = json["title"]?.string else { throw .malformed(event: name, field: "title") }
            return .streamTitleChanged(t)
        case "playlists_loaded": return .playlistsLoaded
        case "playlist_changed": return .playlistChanged
        case "playlist_deleted": return .playlistDeleted
        default: return .other(name)
        }
    }
}
