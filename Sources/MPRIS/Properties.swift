import DBus

public enum MPRISInterface {
    public static let root = "org.mpris.MediaPlayer2"
    public static let player = "org.mpris.MediaPlayer2.Player"
    public static let properties = "org.freedesktop.DBus.Properties"
    public static let introspectable = "org.freedesktop.DBus.Introspectable"
    public static let peer = "org.freedesktop.DBus.Peer"
    public static let trackList = "org.mpris.MediaPlayer2.TrackList"
    public static let playlists = "org.mpris.MediaPlayer2.Playlists"
    public static let objectPath = "/org/mpris/MediaPlayer2"
}

/// One property of the MPRIS object: the single place its name, type and access are written.
/// The introspection XML, `Get`/`GetAll`, `Set`'s checks and `PropertiesChanged` are all made
/// from these tables.
public struct MPRISProperty: Sendable {
    public let name: String
    /// D-Bus signature.
    public let type: String
    public let writable: Bool
    /// How a change is signalled: with its value; as invalidated only (TrackList's Tracks, whose
    /// changes the TrackAdded/Removed/Replaced signals describe); or never (Position, which
    /// clients extrapolate between `Seeked` signals, and CanControl, which never changes).
    public let emits: Emits

    public enum Emits: Sendable { case value, invalidates, never }
    let value: @Sendable (PlayerState, _ nowUs: Int64) -> DBusValue

    init(_ name: String, _ type: String, writable: Bool = false, emits: Emits = .value,
         _ value: @escaping @Sendable (PlayerState, _ nowUs: Int64) -> DBusValue) {
        self.name = name; self.type = type; self.writable = writable; self.emits = emits
        self.value = value
    }

    public static let identity = "Groove Audio"
    public static let desktopEntry = "groove-bridge"

    /// org.mpris.MediaPlayer2, in introspection order.
    public static let root: [MPRISProperty] = [
        .init("CanQuit", "b") { _, _ in .bool(true) },
        // CanSetFullscreen is false: a Set is accepted and ignored, as the spec asks.
        .init("Fullscreen", "b", writable: true) { _, _ in .bool(false) },
        .init("CanSetFullscreen", "b") { _, _ in .bool(false) },
        .init("CanRaise", "b") { s, _ in .bool(s.canRaise) },
        .init("HasTrackList", "b") { s, _ in .bool(s.hasTrackList) },
        .init("Identity", "s") { _, _ in .string(identity) },
        .init("DesktopEntry", "s") { _, _ in .string(desktopEntry) },
        .init("SupportedUriSchemes", "as") { s, _ in .strings(s.supportedUriSchemes) },
        .init("SupportedMimeTypes", "as") { s, _ in .strings(s.supportedMimeTypes) },
    ]

    /// org.mpris.MediaPlayer2.Player, in introspection order. Rate is fixed at 1.0 (a live
    /// stream): Minimum = Maximum = 1.0, so any other rate set is out of range and ignored.
    public static let player: [MPRISProperty] = [
        .init("PlaybackStatus", "s") { s, _ in .string(s.playbackStatus.rawValue) },
        .init("LoopStatus", "s", writable: true) { s, _ in .string(s.loopStatus.rawValue) },
        .init("Rate", "d", writable: true) { _, _ in .double(1.0) },
        .init("Shuffle", "b", writable: true) { s, _ in .bool(s.shuffle) },
        .init("Metadata", "a{sv}") { s, _ in s.metadata.dbusValue },
        .init("Volume", "d", writable: true) { s, _ in .double(s.volume) },
        .init("Position", "x", emits: .never) { s, now in .int64(s.position(nowUs: now)) },
        .init("MinimumRate", "d") { _, _ in .double(1.0) },
        .init("MaximumRate", "d") { _, _ in .double(1.0) },
        .init("CanGoNext", "b") { s, _ in .bool(s.canGoNext) },
        .init("CanGoPrevious", "b") { s, _ in .bool(s.canGoPrevious) },
        .init("CanPlay", "b") { s, _ in .bool(s.canPlay) },
        .init("CanPause", "b") { s, _ in .bool(s.canPause) },
        .init("CanSeek", "b") { s, _ in .bool(s.canSeek) },
        .init("CanControl", "b", emits: .never) { _, _ in .bool(true) },
    ]

    /// org.mpris.MediaPlayer2.TrackList: the house queue from the current track on.
    public static let trackList: [MPRISProperty] = [
        .init("Tracks", "ao", emits: .invalidates) { s, _ in .array(element: "o", s.tracklist.map { .objectPath($0.trackID) }) },
        .init("CanEditTracks", "b") { s, _ in .bool(s.canEditTracks) },
    ]

    /// org.mpris.MediaPlayer2.Playlists: Mopidy's playlists.
    public static let playlists: [MPRISProperty] = [
        .init("PlaylistCount", "u") { s, _ in .uint32(UInt32(clamping: s.playlists.count)) },
        .init("Orderings", "as") { _, _ in .strings(PlaylistOrder.allCases.map(\.rawValue)) },
        .init("ActivePlaylist", "(b(oss))") { s, _ in
            .structure([.bool(s.activePlaylist != nil), (s.activePlaylist ?? .invalid).dbusValue])
        },
    ]

    /// The interfaces with properties, in the order their changes are signalled.
    static let interfaces = [MPRISInterface.root, MPRISInterface.player, MPRISInterface.trackList, MPRISInterface.playlists]

    /// The property table of an interface of ours, or nil.
    public static func table(of interface: String) -> [MPRISProperty]? {
        switch interface {
        case MPRISInterface.root: return root
        case MPRISInterface.player: return player
        case MPRISInterface.trackList: return trackList
        case MPRISInterface.playlists: return playlists
        default: return nil
        }
    }

    /// The introspection elements for a table, as the spec's own XML writes them.
    static func introspection(_ table: [MPRISProperty]) -> String {
        table.map { p in
            let head = "    <property name=\"\(p.name)\" type=\"\(p.type)\" access=\"\(p.writable ? "readwrite" : "read")\""
            let annotation: String
            switch p.emits {
            case .value: return head + "/>"
            case .invalidates: annotation = "invalidates"
            case .never: annotation = "false"
            }
            return head + ">\n"
                + "      <annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" value=\"\(annotation)\"/>\n"
                + "    </property>"
        }.joined(separator: "\n")
    }
}

extension PlayerState {
    /// The properties of `interface` with their values at `nowUs`, in introspection order; nil
    /// for an interface without a table.
    public func properties(of interface: String, nowUs: Int64) -> [(String, DBusValue)]? {
        MPRISProperty.table(of: interface).map { $0.map { ($0.name, $0.value(self, nowUs)) } }
    }

    /// What changed from `old` to `self`, per interface: the changed values, and the names of
    /// those signalled as invalidated only; the unsignalled properties left out.
    public func changes(since old: PlayerState)
        -> [(interface: String, changed: [(String, DBusValue)], invalidated: [String])] {
        var out: [(String, [(String, DBusValue)], [String])] = []
        for iface in MPRISProperty.interfaces {
            var changed: [(String, DBusValue)] = [], invalidated: [String] = []
            for p in MPRISProperty.table(of: iface)! where p.emits != .never {
                let v = p.value(self, 0)
                guard v != p.value(old, 0) else { continue }
                if p.emits == .value { changed.append((p.name, v)) } else { invalidated.append(p.name) }
            }
            if !changed.isEmpty || !invalidated.isEmpty { out.append((iface, changed, invalidated)) }
        }
        return out
    }
}
