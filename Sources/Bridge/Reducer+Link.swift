import Audio
import Mopidy
import Support

/// Suspend and resume, the network coming and going, and the way to the server (home first,
/// remote second): what the bridge does about each, decided here and performed by the runner.
extension BridgeState {
    // MARK: - Suspend and resume

    /// When sleep comes the stream stops cleanly (the sound server is told, nothing is cut off mid
    /// write) and the bridge remembers whether this computer is listening; after wake both
    /// sockets reconnect at once (the old ones may be dead without knowing it) and listening
    /// resumes if it is on. Nobody hears anything while asleep: Paused.
    mutating func sleeping(_ on: Bool, _ m: Moment, _ fx: inout [Effect]) {
        guard on != local.asleep else { return }
        local.asleep = on
        link.due = .nothing
        if on {
            local.resumeOnWake = hasStream && local.streamActive
            if local.resumeOnWake { fx.append(.stream(.pause)) }
            // A connection kept warm after a pause may be dead on wake without knowing it: Play
            // after the sleep connects afresh.
            if hasStream { fx.append(.stream(.endWarm)) }
            fx.append(.log(.info, local.resumeOnWake ? "suspend: the stream stops; listening resumes on wake"
                                                     : "suspend: nothing plays here"))
            return
        }
        fx.append(.log(.info, "resumed from suspend: reconnecting" + (local.resumeOnWake ? " and listening again" : "")))
        fx.append(.events(.reconnect))
        if local.resumeOnWake {
            fx.append(.stream(.play))
        } else if local.stream?.isWaitingToRetry == true {
            fx.append(.stream(.retryNow))  // failing when sleep came (a refused password): try at once
        }
        local.resumeOnWake = false
        // Woken elsewhere than it fell asleep, perhaps: the way home is worth a look at once.
        if link.route == .remote { probeOther(m, &fx) }
    }

    /// The user plays while the bridge thinks the machine sleeps (a wake signal lost): awake.
    mutating func awakeByUser() {
        local.asleep = false
        local.resumeOnWake = false
    }

    // MARK: - The network

    /// Connected (again, or to another network): whatever waits is retried at once, held retries
    /// are released, and on the remote route home is probed. Disconnected: nothing is retried
    /// until connected (each attempt would fail), and `status` says "no network".
    mutating func network(_ n: NetworkState, _ m: Moment, _ fx: inout [Effect]) {
        let before = link.network
        link.network = n
        switch n {
        case .connected:
            if before == .disconnected {
                fx.append(.log(.info, "network: connected; reconnecting at once"))
                if hasStream { fx.append(.stream(.hold(false))) }
                fx.append(.events(.hold(false)))
            }
            if hasStream && local.stream?.isWaitingToRetry == true { fx.append(.stream(.retryNow)) }
            if !eventsConnected { fx.append(.events(.retryNow)) }
            // At home, the sockets just told to retry get their 5 s; remote is looked at after that.
            link.due = .nothing
            if link.route == .remote { probeOther(m, &fx) }
        case .disconnected:
            guard before != .disconnected else { return }
            fx.append(.log(.info, "network: none (NetworkManager); retrying when it is back"))
            // A connection kept warm after a pause is likely dead with the network: Play connects
            // afresh rather than wait out its stall.
            if hasStream { fx.append(contentsOf: [.stream(.hold(true)), .stream(.endWarm)]) }
            fx.append(.events(.hold(true)))
            link.due = .nothing
        case .unknown:
            break
        }
    }

    // MARK: - The route

    /// The way in use works: Mopidy's events flow and the stream, if wanted, is not retrying.
    var routeWorks: Bool {
        eventsConnected && local.stream?.isWaitingToRetry != true
    }

    /// Called after every input: notices the route in use failing (and the other then probed
    /// after `BridgeTuning.routeFailingMs`), and schedules the minutely probe of home while on
    /// the remote route. No remote route configured: nothing happens here, and nothing is due.
    mutating func followRoute(_ m: Moment, _ fx: inout [Effect]) {
        if link.routeSinceMs == nil { link.routeSinceMs = m.nowMs }
        guard config.remoteLayouts != nil else {
            if link.route == .remote { switchRoute(to: .home, why: "no remote route is configured", m, &fx) }
            link.due = .nothing
            return
        }
        guard !local.asleep, link.network != .disconnected else { return }
        guard routeWorks else {
            if link.due.failingSinceMs == nil {
                link.due = .failing(sinceMs: m.nowMs,
                                    probeAtMs: m.nowMs.adding(saturating: BridgeTuning.routeFailingMs - BridgeTuning.routeProbeLeadMs))
            }
            return
        }
        // Working (again): at home nothing is due; on remote, home is looked at in a minute.
        if link.due.failingSinceMs != nil || (link.due == .nothing && link.probing == nil) {
            link.due = link.route == .home ? .nothing : .probe(atMs: m.nowMs.adding(saturating: BridgeTuning.homeProbeMs))
        }
        // Home answers and nothing plays here: no music to cut.
        if link.route == .remote && link.homeAnswered && !local.streamActive {
            switchRoute(to: .home, why: "home answers again (nothing playing here)", m, &fx)
        }
    }

    /// The probe or the switch that came due (`.due`).
    mutating func routeDue(_ m: Moment, _ fx: inout [Effect]) {
        if case .switchOver(let since, let at) = link.due, at <= m.nowMs {
            link.due = .failing(sinceMs: since, probeAtMs: nil)
            if !routeWorks { switchRoute(to: link.route.other, why: failingWhy(m), m, &fx) }
        }
        guard let at = link.due.probeAtMs, at <= m.nowMs else { return }
        link.due.probeTaken()
        probeOther(m, &fx)
    }

    /// Why the route in use is left: how long it failed, and the last failure.
    func failingWhy(_ m: Moment) -> String {
        let since = link.due.failingSinceMs.map { " for \(Double(m.nowMs.subtracting(saturating: $0)) / 1000) s" } ?? ""
        let why = (local.stream?.retryReason ?? lastError).map { ": \($0)" } ?? ""
        return "\(link.route.rawValue) fails\(since)\(why); \(link.route.other.rawValue) answers"
    }

    /// Asks whether the route not in use answers, unless that is under way.
    mutating func probeOther(_ m: Moment, _ fx: inout [Effect]) {
        let other = link.route.other
        guard link.probing == nil, let layouts = layouts(of: other) else { return }
        link.probing = other
        link.due.probeTaken()
        fx.append(.probe(other, layouts: layouts, stream: streamConfig(of: other)))
    }

    /// The other route answered or not. The route in use failing: switch at once. On the
    /// remote route, working: home is taken at the next track change heard, or at once while
    /// nothing plays here, so no track is cut in the middle.
    mutating func probed(_ r: Route, answered: Bool, detail: String, _ m: Moment, _ fx: inout [Effect]) {
        guard link.probing == r else { return }
        link.probing = nil
        guard r == link.route.other, !local.asleep, link.network != .disconnected else { return }
        let failing = !routeWorks
        if !answered {
            link.homeAnswered = false
            fx.append(.log(failing ? .warning : .debug, "route: \(r.rawValue) does not answer either: \(detail)"))
            link.due.probe(atMs: m.nowMs.adding(saturating: failing ? BridgeTuning.routeProbeWhileFailingMs : BridgeTuning.homeProbeMs))
            return
        }
        if failing {
            // Taken once the route in use has failed for the whole 5 s.
            let since = link.due.failingSinceMs ?? m.nowMs
            let at = since.adding(saturating: BridgeTuning.routeFailingMs)
            if at <= m.nowMs {
                switchRoute(to: r, why: failingWhy(m), m, &fx)
            } else {
                link.due = .switchOver(sinceMs: since, atMs: at)
            }
        } else if r == .home {
            link.homeAnswered = true
            link.due.probe(atMs: m.nowMs.adding(saturating: BridgeTuning.homeProbeMs))
            if local.streamActive {
                fx.append(.log(.info, "route: home answers again; going home at the next track change"))
            } else {
                switchRoute(to: .home, why: "home answers again (nothing playing here)", m, &fx)
            }
        }
    }

    /// A new track is heard: the moment to go home without cutting one short.
    mutating func trackChangeHeard(_ m: Moment, _ fx: inout [Effect]) {
        guard link.route == .remote, link.homeAnswered else { return }
        switchRoute(to: .home, why: "home answers again (at a track change)", m, &fx)
    }

    /// Stream, events and RPC move together; the state (track, position, lists) stays, and a
    /// resync follows the events socket's reconnection.
    mutating func switchRoute(to r: Route, why: String, _ m: Moment, _ fx: inout [Effect]) {
        guard r != link.route else { return }
        link.route = r
        link.routeSinceMs = m.nowMs
        link.routeReason = why
        link.due = .nothing
        // A probe still under way asks about the route just taken: its answer is not waited for.
        link.probing = nil
        link.homeAnswered = false
        fx.append(.log(.info, "route: \(r.rawValue): \(why)"))
        if let layouts = layouts(of: r) {
            link.layouts = layouts
            fx.append(.route(r, layouts: layouts))
        }
        if let next = streamConfig(of: r), next != streamConfig {
            streamConfig = next
            fx.append(.stream(.configure(next)))
        }
    }

    /// Mopidy's events answered at `url`: with several layouts on the route in use (a host given
    /// alone), RPC follows the one that answered. Decided here, on the bridge's thread, in order
    /// with the route's switches: a socket that connected to a route just left changes nothing
    /// (its replacement on the new route follows).
    mutating func useLayout(answeringAt url: String, _ fx: inout [Effect]) {
        guard let layouts = link.layouts ?? layouts(of: link.route), layouts.count > 1,
              let layout = layouts.first(where: { $0.wsURL == url }) else { return }
        fx.append(.useLayout(layout))
        let which = layout == layouts[0] ? "the Groove Audio layout" : "the plain Mopidy layout"
        fx.append(.log(.info, "Mopidy answers in \(which) at \(layout.rpcURL)"))
    }

    func layouts(of r: Route) -> [MopidyEndpoints]? {
        r == .home ? config.homeLayouts : config.remoteLayouts
    }

    /// The stream's configuration on route `r`; nil without a stream.
    func streamConfig(of r: Route) -> StreamConfig? {
        guard hasStream, let url = r == .home ? config.effectiveStreamURL : config.effectiveRemoteStreamURL else { return nil }
        return BridgeState.streamConfig(config, url: url)
    }
}

extension StreamStatus {
    /// Between attempts: the connection failed and another is coming.
    var isWaitingToRetry: Bool { retryReason != nil }

    /// Why the last connection failed, between attempts.
    var retryReason: String? {
        switch self {
        case .reconnecting(_, let reason): return reason
        case .failed(let reason, _): return reason.message
        default: return nil
        }
    }
}
