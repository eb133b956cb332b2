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
}

/// Receives the commands. Called on the D-Bus thread: implementations hand the work on and
/// return at once (a slow server must never make the bus slow).
public protocol MPRISController: AnyObject, Sendable {
    func perform(_ command: PlayerCommand)
}

/// The object /org/mpris/MediaPlayer2 on a bus connection: Root, Player, Properties,
/// Introspectable (and Peer, answered by libdbus). State comes in through `update`; every change
/// except Position and CanControl goes out as one PropertiesChanged per interface per burst.
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

    public init(connection: DBusConnection, controller: MPRISController, initial: PlayerState = PlayerState(),
                status: @escaping @Sendable () -> String = { "{}" })
    {
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
        var name = MPRISService.busName
        if try connection.requestName(name) == .taken {
            guard allowInstance else { return nil }
            let alt = "\(MPRISService.busName).instance\(getpid())"
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

    private func flush() {
        let (old, new) = state.withLock { s -> (PlayerState, PlayerState) in
            defer { s.published = s.current; s.flushQueued = false }
            return (s.published, s.current)
        }
        for (iface, changed) in new.changes(since: old) {
            connection.emitSignal(path: MPRISInterface.objectPath, interface: MPRISInterface.properties,
                                  member: "PropertiesChanged",
                                  args: [.string(iface), .vardict(changed), .strings([])])
        }
    }

    // MARK: - Calls

    public func handle(_ call: MethodCall) -> MethodReply {
        switch call.interface {
        case MPRISInterface.properties?: return properties(call)
        case MPRISInterface.introspectable?:
            return call.member == "Introspect" ? .values([.string(mprisIntrospectionXML)]) : unknownMethod(call)
        case MPRISInterface.root?: return root(call)
        case MPRISInterface.player?: return player(call)
        case MPRISService.statusInterface?:
            return call.member == "Status" ? .values([.string(statusProvider())]) : unknownMethod(call)
        case nil:
            // No interface given: D-Bus allows it; look the member up in ours.
            for iface in [MPRISInterface.player, MPRISInterface.root, MPRISInterface.properties, MPRISInterface.introspectable] {
                let r = handle(MethodCall(path: call.path, interface: iface, member: call.member,
                                          sender: call.sender, signature: call.signature, args: call.args))
                if case .error(let name, _) = r, name == MPRISService.unknownMethodName { continue }
                return r
            }
            return unknownMethod(call)
        default:
            return .error(name: "org.freedesktop.DBus.Error.UnknownInterface",
                          message: "no interface \(call.interface ?? "") on \(call.path)")
        }
    }

    static let unknownMethodName = "org.freedesktop.DBus.Error.UnknownMethod"

    private func unknownMethod(_ call: MethodCall) -> MethodReply {
        .error(name: MPRISService.unknownMethodName,
               message: "no method \(call.member) with signature '\(call.signature)' in \(call.interface ?? "any interface")")
    }

    /// Checks the call's signature; the reply when it is wrong.
    private func expect(_ call: MethodCall, _ signature: String) -> MethodReply? {
        call.signature == signature ? nil
            : .invalidArgs("\(call.member) takes '\(signature)', not '\(call.signature)'")
    }

    private func root(_ call: MethodCall) -> MethodReply {
        if let bad = expect(call, ""), ["Raise", "Quit"].contains(call.member) { return bad }
        switch call.member {
        case "Raise":
            if current.canRaise { controller?.perform(.raise) }
            return .empty
        case "Quit":
            controller?.perform(.quit)
            return .empty
        default: return unknownMethod(call)
        }
    }

    private func player(_ call: MethodCall) -> MethodReply {
        let s = current
        switch call.member {
        case "Next", "Previous", "Pause", "PlayPause", "Stop", "Play":
            if let bad = expect(call, "") { return bad }
        case "Seek":
            if let bad = expect(call, "x") { return bad }
        case "SetPosition":
            if let bad = expect(call, "ox") { return bad }
        case "OpenUri":
            if let bad = expect(call, "s") { return bad }
        default:
            return unknownMethod(call)
        }
        switch call.member {
        case "Next": if s.canGoNext { controller?.perform(.next) }
        case "Previous": if s.canGoPrevious { controller?.perform(.previous) }
        case "Pause": if s.canPause { controller?.perform(.pause) }
        case "Play": if s.canPlay { controller?.perform(.play) }
        case "Stop": controller?.perform(.stop)
        case "PlayPause":
            // MPRIS: with CanPause false, PlayPause has no effect and raises an error.
            guard s.canPause else {
                return .error(name: "org.freedesktop.DBus.Error.NotSupported", message: "this player cannot pause now")
            }
            if s.playbackStatus == .playing { controller?.perform(.pause) } else if s.canPlay { controller?.perform(.play) }
        case "Seek":
            guard s.canSeek, let offset = call.args.first?.int64Value else { break }
            // Any int64 may arrive: the sum saturates instead of trapping.
            let target = s.position(nowUs: monotonicUs()).adding(saturating: offset)
            if let len = s.metadata.lengthUs, target > len {
                // MPRIS: seeking past the end acts like Next.
                if s.canGoNext { controller?.perform(.next) }
            } else {
                controller?.perform(.setPosition(us: max(0, target)))
            }
        case "SetPosition":
            guard s.canSeek, let track = call.args[0].objectPathValue, let pos = call.args[1].int64Value else { break }
            // MPRIS: a stale track id, a negative position or one past the end is ignored.
            guard track == s.metadata.trackID, track != TrackMetadata.noTrackID, pos >= 0 else { break }
            if let len = s.metadata.lengthUs, pos > len { break }
            controller?.perform(.setPosition(us: pos))
        case "OpenUri":
            guard let uri = call.args.first?.stringValue else { break }
            let scheme = uri.split(separator: ":", maxSplits: 1).first.map(String.init) ?? ""
            guard uri.contains(":"), s.supportedUriSchemes.contains(scheme) else {
                return .invalidArgs("unsupported URI scheme '\(scheme)'; supported: \(s.supportedUriSchemes.joined(separator: ", "))")
            }
            controller?.perform(.openURI(uri))
        default: break
        }
        return .empty
    }

    private func properties(_ call: MethodCall) -> MethodReply {
        let now = monotonicUs()
        switch call.member {
        case "Get":
            if let bad = expect(call, "ss") { return bad }
            let iface = call.args[0].stringValue!, name = call.args[1].stringValue!
            guard let props = current.properties(of: iface, nowUs: now) else { return noInterface(iface) }
            guard let value = props.first(where: { $0.0 == name })?.1 else { return noProperty(iface, name) }
            return .values([.variant(value)])
        case "GetAll":
            if let bad = expect(call, "s") { return bad }
            let iface = call.args[0].stringValue!
            guard let props = current.properties(of: iface, nowUs: now) else {
                // Our own interfaces without properties answer with none.
                if [MPRISInterface.introspectable, MPRISInterface.peer, MPRISInterface.properties,
                    MPRISService.statusInterface].contains(iface) { return .values([.vardict([])]) }
                return noInterface(iface)
            }
            return .values([.vardict(props)])
        case "Set":
            if let bad = expect(call, "ssv") { return bad }
            let iface = call.args[0].stringValue!, name = call.args[1].stringValue!
            guard let value = call.args[2].variantValue else { return .invalidArgs("Set takes a variant") }
            return set(iface, name, value)
        default:
            return unknownMethod(call)
        }
    }

    private func set(_ iface: String, _ name: String, _ value: DBusValue) -> MethodReply {
        guard let table = MPRISProperty.table(of: iface) else { return noInterface(iface) }
        guard let property = table.first(where: { $0.name == name }) else { return noProperty(iface, name) }
        guard property.writable else {
            return .error(name: "org.freedesktop.DBus.Error.PropertyReadOnly", message: "\(name) is read-only")
        }
        guard value.signature == property.type else {
            return .invalidArgs("\(name) is of type '\(property.type)', not '\(value.signature)'")
        }
        switch (name, value) {
        case ("Volume", .double(let v)):
            guard v.isFinite else { return .invalidArgs("Volume must be a finite number") }
            // MPRIS: a negative volume means 0.0. Mopidy's mixer has no gain above 100 %.
            controller?.perform(.setVolume(min(1.0, max(0.0, v))))
        case ("LoopStatus", .string(let s)):
            guard let status = LoopStatus(rawValue: s) else {
                return .invalidArgs("LoopStatus is one of None, Track, Playlist; not '\(s)'")
            }
            controller?.perform(.setLoopStatus(status))
        case ("Shuffle", .bool(let b)):
            controller?.perform(.setShuffle(b))
        case ("Rate", .double(let r)):
            // Minimum = Maximum = 1.0: any other rate is out of range and ignored.
            guard r.isFinite else { return .invalidArgs("Rate must be a finite number") }
        case ("Fullscreen", _):
            break  // CanSetFullscreen is false: ignored, as the spec asks
        default:
            break
        }
        return .empty
    }

    private func noInterface(_ iface: String) -> MethodReply {
        .error(name: "org.freedesktop.DBus.Error.UnknownInterface", message: "no interface \(iface) on \(MPRISInterface.objectPath)")
    }

    private func noProperty(_ iface: String, _ name: String) -> MethodReply {
        .error(name: "org.freedesktop.DBus.Error.UnknownProperty", message: "no property \(name) in \(iface)")
    }
}
