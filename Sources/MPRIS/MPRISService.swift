import DBus
import Glibc
import Support
import Synchronization

/// What an MPRIS call asks the player to do, once the service has checked the call's types,
/// the matching `Can*` flag and the spec's rules (a stale track id, a position past the end).
public enum PlayerCommand: Equatable, Sendable {
    case play, pause, stop, next, previous
    /// Absolute position in the current track, already checked to be within it.
    case setPosition(us: Int64)
    case openURI(String)
    /// 0.0–1.0, already clamped.
    case setVolume(Double)
    case setLoopStatus(LoopStatus)
    case setShuffle(Bool)
    case raise, quit
    /// TrackList: `uri` after the track `afterTlid` (nil: at the start), then played if asked.
    case addTrack(uri: String, afterTlid: Int?, play: Bool)
    case removeTrack(tlid: Int)
    case goTo(tlid: Int)
    /// Playlists: the playlist with this URI replaces the tracklist and plays.
    case activatePlaylist(uri: String)
    /// A client asked for these tracks' metadata (GetTracksMetadata) and their covers are not
    /// known yet: fetch them, so that TrackMetadataChanged brings them.
    case wantCovers(tlids: [Int])
}

/// Receives the commands. Called on the D-Bus thread: implementations hand the work on and
/// return at once (a slow server must never make the bus slow).
public protocol MPRISController: AnyObject, Sendable {
    func perform(_ command: PlayerCommand)
}

/// The object /org/mpris/MediaPlayer2 on a bus connection: Root, Player, TrackList, Playlists,
/// Properties, Introspectable (and Peer, answered by libdbus). State comes in through `update`;
/// every signalled change goes out as one PropertiesChanged per interface per burst.
public final class MPRISService: DBusObject, @unchecked Sendable {
    public static let busName = "org.mpris.MediaPlayer2.groove"
    public static let statusInterface = "io.github.GrooveBridge1"

    private let connection: DBusConnection
    /// Weak: the controller owns this service.
    private weak var controller: MPRISController?
    private let state = Mutex<(current: PlayerState, published: PlayerState, flushQueued: Bool)>(
        (PlayerState(), PlayerState(), false))
    private let statusProvider: @Sendable () -> String
    public private(set) var ownedName = ""
    /// The well-known name to take (`busName`; another in tests that need a second player).
    private let name: String

    public init(connection: DBusConnection, controller: MPRISController, initial: PlayerState = PlayerState(),
                name: String = MPRISService.busName, status: @escaping @Sendable () -> String = { "{}" })
    {
        self.name = name
        self.connection = connection
        self.controller = controller
        self.statusProvider = status
        state.withLock { $0 = (initial, initial, false) }
    }

    /// Registers the object and takes the bus name, or `.instance<pid>` when another process
    /// owns it. Returns the name taken.
    @discardableResult
    public func publish() throws(DBusFailure) -> String {
        // Always takes a name: the instance name when the main one is owned.
        try publish(allowInstance: true)!
    }

    /// Registers the object and takes the bus name. When another process owns it: with
    /// `allowInstance`, takes `.instance<pid>`; without, returns nil and takes nothing.
    public func publish(allowInstance: Bool) throws(DBusFailure) -> String? {
        connection.register(path: MPRISInterface.objectPath, object: self)
        for parent in ["/", "/org", "/org/mpris"] {
            connection.register(path: parent, object: ParentNode(path: parent))
        }
        var name = self.name
        if try connection.requestName(name) == .taken {
            guard allowInstance else { return nil }
            let alt = "\(self.name).instance\(getpid())"
            Log.warning("\(name) is owned by another process; publishing as \(alt)")
            name = alt
            guard try connection.requestName(alt) == .primaryOwner else {
                throw DBusFailure(name: "org.freedesktop.DBus.Error.Failed", message: "cannot own \(alt)")
            }
        }
        ownedName = name
        Log.info("MPRIS: published as \(name)")
        return name
    }

    /// A copy of the current state.
    public var current: PlayerState { state.withLock { $0.current } }

    /// Changes the state; the resulting PropertiesChanged goes out on the D-Bus thread, merged
    /// with any other update made before it runs.
    public func update(_ change: (inout PlayerState) -> Void) {
        let queue = state.withLock { s -> Bool in
            change(&s.current)
            guard s.current != s.published, !s.flushQueued else { return false }
            s.flushQueued = true
            return true
        }
        if queue { connection.post { [self] _ in flush() } }
    }

    /// Emits `Seeked` (after any pending property changes). Only for a real jump.
    public func emitSeeked(positionUs: Int64) {
        connection.post { [self] conn in
            flush()
            conn.emitSignal(path: MPRISInterface.objectPath, interface: MPRISInterface.player,
                            member: "Seeked", args: [.int64(max(0, positionUs))])
        }
    }

    /// Emits a signal of one of our interfaces (TrackList's, Playlists'), after any pending
    /// property changes.
    public func emit(_ interface: String, _ member: String, _ args: [DBusValue]) {
        connection.post { [self] conn in
            flush()
            conn.emitSignal(path: MPRISInterface.objectPath, interface: interface, member: member, args: args)
        }
    }

    private func flush() {
        let (old, new) = state.withLock { s -> (PlayerState, PlayerState) in
            defer { s.published = s.current; s.flushQueued = false }
            return (s.published, s.current)
        }
        for (iface, changed, invalidated) in new.changes(since: old) {
            connection.emitSignal(path: MPRISInterface.objectPath, interface: MPRISInterface.properties,
                                  member: "PropertiesChanged",
                                  args: [.string(iface), .vardict(changed), .strings(invalidated)])
        }
    }

    // MARK: - Calls

    public func handle(_ call: MethodCall) -> MethodReply {
        let (reply, commands) = MPRISCalls.answer(call, state: current, nowUs: monotonicUs(), status: statusProvider)
        for c in commands { controller?.perform(c) }
        return reply
    }
}
