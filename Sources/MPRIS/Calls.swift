import DBus

/// How the MPRIS object answers method calls: a pure function of the call, the published state
/// and the time, returning the reply and the commands for the player. Every argument is checked
/// (signature, `Can*` flag, the spec's rules) before a command is made, and any value a client
/// can send gets a reply or a named error: the fuzzer drives this with hostile calls.
public struct MPRISCalls {
    static let unknownMethodName = "org.freedesktop.DBus.Error.UnknownMethod"

    let state: PlayerState
    let nowUs: Int64
    private(set) var commands: [PlayerCommand] = []

    private init(state: PlayerState, nowUs: Int64) {
        self.state = state
        self.nowUs = nowUs
    }

    /// The reply to `call` and the commands it asks the player for, from the published `state`
    /// at `nowUs`. `status` makes the bridge's status text, only when it is asked for.
    public static func answer(_ call: MethodCall, state: PlayerState, nowUs: Int64,
                              status: () -> String) -> (reply: MethodReply, commands: [PlayerCommand]) {
        var calls = MPRISCalls(state: state, nowUs: nowUs)
        let reply = calls.handle(call, status: status)
        return (reply, calls.commands)
    }

    private mutating func handle(_ call: MethodCall, status: () -> String) -> MethodReply {
        switch call.interface {
        case MPRISInterface.properties?: return properties(call)
        case MPRISInterface.introspectable?:
            return call.member == "Introspect" ? .values([.string(mprisIntrospectionXML)]) : unknownMethod(call)
        case MPRISInterface.root?: return root(call)
        case MPRISInterface.player?: return player(call)
        case MPRISInterface.trackList?: return trackList(call)
        case MPRISInterface.playlists?: return playlists(call)
        case MPRISService.statusInterface?:
            return call.member == "Status" ? .values([.string(status())]) : unknownMethod(call)
        case nil:
            // No interface given: D-Bus allows it; look the member up in ours.
            for iface in [MPRISInterface.player, MPRISInterface.root, MPRISInterface.trackList, MPRISInterface.playlists,
                          MPRISInterface.properties, MPRISInterface.introspectable] {
                let r = handle(MethodCall(path: call.path, interface: iface, member: call.member,
                                          sender: call.sender, signature: call.signature, args: call.args),
                               status: status)
                if case .error(let name, _) = r, name == MPRISCalls.unknownMethodName { continue }
                return r
            }
            return unknownMethod(call)
        default:
            return .error(name: "org.freedesktop.DBus.Error.UnknownInterface",
                          message: "no interface \(call.interface ?? "") on \(call.path)")
        }
    }


    private func unknownMethod(_ call: MethodCall) -> MethodReply {
        .error(name: MPRISCalls.unknownMethodName,
               message: "no method \(call.member) with signature '\(call.signature)' in \(call.interface ?? "any interface")")
    }

    /// Checks the call's signature; the reply when it is wrong.
    private func expect(_ call: MethodCall, _ signature: String) -> MethodReply? {
        call.signature == signature ? nil
            : .invalidArgs("\(call.member) takes '\(signature)', not '\(call.signature)'")
    }

    private mutating func root(_ call: MethodCall) -> MethodReply {
        if let bad = expect(call, ""), ["Raise", "Quit"].contains(call.member) { return bad }
        switch call.member {
        case "Raise":
            if state.canRaise { commands.append(.raise) }
            return .empty
        case "Quit":
            commands.append(.quit)
            return .empty
        default: return unknownMethod(call)
        }
    }

    private mutating func player(_ call: MethodCall) -> MethodReply {
        let s = state
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
        case "Next": if s.canGoNext { commands.append(.next) }
        case "Previous": if s.canGoPrevious { commands.append(.previous) }
        case "Pause": if s.canPause { commands.append(.pause) }
        case "Play": if s.canPlay { commands.append(.play) }
        case "Stop": commands.append(.stop)
        case "PlayPause":
            // MPRIS: with CanPause false, PlayPause has no effect and raises an error.
            guard s.canPause else {
                return .error(name: "org.freedesktop.DBus.Error.NotSupported", message: "this player cannot pause now")
            }
            if s.playbackStatus == .playing { commands.append(.pause) } else if s.canPlay { commands.append(.play) }
        case "Seek":
            guard s.canSeek, let offset = call.args.first?.int64Value else { break }
            // Any int64 may arrive: the sum saturates instead of trapping.
            let target = s.position(nowUs: nowUs).adding(saturating: offset)
            if let len = s.metadata.lengthUs, target > len {
                // MPRIS: seeking past the end acts like Next.
                if s.canGoNext { commands.append(.next) }
            } else {
                commands.append(.setPosition(us: max(0, target)))
            }
        case "SetPosition":
            guard s.canSeek, call.args.count == 2, let track = call.args[0].objectPathValue,
                  let pos = call.args[1].int64Value else { break }
            // MPRIS: a stale track id, a negative position or one past the end is ignored.
            guard track == s.metadata.trackID, track != TrackMetadata.noTrackID, pos >= 0 else { break }
            if let len = s.metadata.lengthUs, pos > len { break }
            commands.append(.setPosition(us: pos))
        case "OpenUri":
            guard let uri = call.args.first?.stringValue else { break }
            if let refused = unsupported(uri) { return refused }
            commands.append(.openURI(uri))
        default: break
        }
        return .empty
    }

    /// InvalidArgs for a URI whose scheme Mopidy does not serve; nil when it does.
    private func unsupported(_ uri: String) -> MethodReply? {
        let scheme = uri.split(separator: ":", maxSplits: 1).first.map(String.init) ?? ""
        guard uri.contains(":"), state.supportedUriSchemes.contains(scheme) else {
            return .invalidArgs("unsupported URI scheme '\(scheme.prefix(64))'; supported: \(state.supportedUriSchemes.joined(separator: ", "))")
        }
        return nil
    }

    /// The tracklist id of a track id that is in Tracks; nil for any other (the spec: an unknown
    /// or stale id has no effect).
    private func knownTlid(_ value: DBusValue?) -> Int? {
        guard let id = value?.objectPathValue, state.tracklist.contains(where: { $0.trackID == id }) else { return nil }
        return TrackMetadata.tlid(of: id)
    }

    private mutating func trackList(_ call: MethodCall) -> MethodReply {
        let signatures = ["GetTracksMetadata": "ao", "AddTrack": "sob", "RemoveTrack": "o", "GoTo": "o"]
        guard let signature = signatures[call.member] else { return unknownMethod(call) }
        if let bad = expect(call, signature) { return bad }
        switch call.member {
        case "GetTracksMetadata":
            guard case .array(_, let ids)? = call.args.first else { return .invalidArgs("GetTracksMetadata takes 'ao'") }
            let wanted = ids.compactMap(\.objectPathValue)
            let found = wanted.compactMap { id in state.tracklist.first { $0.trackID == id } }
            // Covers are fetched when asked for (through the cache, never on this thread).
            let uncovered = found.filter { $0.artURL == nil }.compactMap { TrackMetadata.tlid(of: $0.trackID) }
            if !uncovered.isEmpty { commands.append(.wantCovers(tlids: uncovered)) }
            return .values([.array(element: "a{sv}", found.map(\.dbusValue))])
        case "AddTrack":
            guard state.canEditTracks, call.args.count == 3, let uri = call.args[0].stringValue,
                  let after = call.args[1].objectPathValue, let play = call.args[2].boolValue else { break }
            if let refused = unsupported(uri) { return refused }
            if after == TrackMetadata.noTrackID {
                // The start of Tracks, which begins with the current track: right after it (before
                // it, the new track would not be in Tracks at all).
                commands.append(.addTrack(uri: uri, afterTlid: TrackMetadata.tlid(of: state.metadata.trackID), play: play))
            } else if let tlid = knownTlid(call.args[1]) {
                commands.append(.addTrack(uri: uri, afterTlid: tlid, play: play))
            }
        case "RemoveTrack":
            if state.canEditTracks, let tlid = knownTlid(call.args.first) { commands.append(.removeTrack(tlid: tlid)) }
        default:  // GoTo
            if let tlid = knownTlid(call.args.first) { commands.append(.goTo(tlid: tlid)) }
        }
        return .empty
    }

    private mutating func playlists(_ call: MethodCall) -> MethodReply {
        switch call.member {
        case "ActivatePlaylist":
            if let bad = expect(call, "o") { return bad }
            let id = call.args.first?.objectPathValue
            if let p = state.playlists.first(where: { $0.id == id }) { commands.append(.activatePlaylist(uri: p.uri)) }
            return .empty
        case "GetPlaylists":
            if let bad = expect(call, "uusb") { return bad }
            guard call.args.count == 4, case .uint32(let index) = call.args[0], case .uint32(let max) = call.args[1],
                  let orderName = call.args[2].stringValue, let reverse = call.args[3].boolValue else {
                return .invalidArgs("GetPlaylists takes 'uusb'")
            }
            guard let order = PlaylistOrder(rawValue: orderName) else {
                return .invalidArgs("ordering '\(orderName.prefix(64))' is not one of \(PlaylistOrder.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            var list = state.playlists
            if order == .alphabetical { list.sort { $0.name.lowercased() < $1.name.lowercased() } }
            if reverse { list.reverse() }
            let start = min(Int(index), list.count)
            let end = min(list.count, start + Int(max))
            return .values([.array(element: "(oss)", list[start..<end].map(\.dbusValue))])
        default:
            return unknownMethod(call)
        }
    }

    private mutating func properties(_ call: MethodCall) -> MethodReply {
        switch call.member {
        case "Get":
            if let bad = expect(call, "ss") { return bad }
            guard let iface = call.args[0].stringValue, let name = call.args[1].stringValue else {
                return .invalidArgs("Get takes two strings")
            }
            guard let props = state.properties(of: iface, nowUs: nowUs) else { return noInterface(iface) }
            guard let value = props.first(where: { $0.0 == name })?.1 else { return noProperty(iface, name) }
            return .values([.variant(value)])
        case "GetAll":
            if let bad = expect(call, "s") { return bad }
            guard let iface = call.args.first?.stringValue else { return .invalidArgs("GetAll takes a string") }
            guard let props = state.properties(of: iface, nowUs: nowUs) else {
                // Our own interfaces without properties answer with none.
                if [MPRISInterface.introspectable, MPRISInterface.peer, MPRISInterface.properties,
                    MPRISService.statusInterface].contains(iface) { return .values([.vardict([])]) }
                return noInterface(iface)
            }
            return .values([.vardict(props)])
        case "Set":
            if let bad = expect(call, "ssv") { return bad }
            guard call.args.count == 3, let iface = call.args[0].stringValue, let name = call.args[1].stringValue,
                  let value = call.args[2].variantValue else {
                return .invalidArgs("Set takes two strings and a variant")
            }
            return set(iface, name, value)
        default:
            return unknownMethod(call)
        }
    }

    private mutating func set(_ iface: String, _ name: String, _ value: DBusValue) -> MethodReply {
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
            commands.append(.setVolume(min(1.0, max(0.0, v))))
        case ("LoopStatus", .string(let s)):
            guard let status = LoopStatus(rawValue: s) else {
                return .invalidArgs("LoopStatus is one of None, Track, Playlist; not '\(s)'")
            }
            commands.append(.setLoopStatus(status))
        case ("Shuffle", .bool(let b)):
            commands.append(.setShuffle(b))
        case ("Rate", .double(let r)):
            // Minimum = Maximum = 1.0: any other rate is out of range and ignored, but 0.0, which
            // the spec says acts as Pause.
            guard r.isFinite else { return .invalidArgs("Rate must be a finite number") }
            if r == 0 && state.canPause { commands.append(.pause) }
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
