import DBus

public enum MPRISInterface {
    public static let root = "org.mpris.MediaPlayer2"
    public static let player = "org.mpris.MediaPlayer2.Player"
    public static let properties = "org.freedesktop.DBus.Properties"
    public static let introspectable = "org.freedesktop.DBus.Introspectable"
    public static let peer = "org.freedesktop.DBus.Peer"
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
    /// False for the properties the spec marks `EmitsChangedSignal=false` (Position, which
    /// clients extrapolate between `Seeked` signals, and CanControl, which never changes).
    public let signalled: Bool
    let value: @Sendable (PlayerState, _ nowUs: Int64) -> DBusValue

    init(_ name: String, _ type: String, writable: Bool = false, signalled: Bool = true,
         _ value: @escaping @Sendable (PlayerState, _ nowUs: Int64) -> DBusValue) {
        self.name = name; self.type = type; self.writable = writable; self.signalled = signalled
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
        .init("Position", "x", signalled: false) { s, now in .int64(s.position(nowUs: now)) },
        .init("MinimumRate", "d") { _, _ in .double(1.0) },
        .init("MaximumRate", "d") { _, _ in .double(1.0) },
        .init("CanGoNext", "b") { s, _ in .bool(s.canGoNext) },
        .init("CanGoPrevious", "b") { s, _ in .bool(s.canGoPrevious) },
        .init("CanPlay", "b") { s, _ in .bool(s.canPlay) },
        .init("CanPause", "b") { s, _ in .bool(s.canPause) },
        .init("CanSeek", "b") { s, _ in .bool(s.canSeek) },
        .init("CanControl", "b", signalled: false) { _, _ in .bool(true) },
    ]

    /// The property table of an interface of ours, or nil.
    public static func table(of interface: String) -> [MPRISProperty]? {
        switch interface {
        case MPRISInterface.root: return root
        case MPRISInterface.player: return player
        default: return nil
        }
    }

    /// The introspection elements for a table, as the spec's own XML writes them.
    static func introspection(_ table: [MPRISProperty]) -> String {
        table.map { p in
            let head = "    <property name=\"\(p.name)\" type=\"\(p.type)\" access=\"\(p.writable ? "readwrite" : "read")\""
            guard !p.signalled else { return head + "/>" }
            return head + ">\n"
                + "      <annotation name=\"org.freedesktop.DBus.Property.EmitsChangedSignal\" value=\"false\"/>\n"
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

    /// What changed from `old` to `self`, per interface, leaving out the unsignalled properties.
    public func changes(since old: PlayerState) -> [(interface: String, changed: [(String, DBusValue)])] {
        var out: [(String, [(String, DBusValue)])] = []
        for iface in [MPRISInterface.root, MPRISInterface.player] {
            let changed = MPRISProperty.table(of: iface)!.filter(\.signalled).compactMap { p -> (String, DBusValue)? in
                let v = p.value(self, 0)
                return v == p.value(old, 0) ? nil : (p.name, v)
            }
            if !changed.isEmpty { out.append((iface, changed)) }
        }
        return out
    }
}
