import Audio
import Mopidy

/// Which way the bridge reaches the server: the home network's addresses, or the ones from
/// outside (`remote_*`).
public enum Route: String, Sendable, Equatable, CaseIterable {
    case home, remote

    var other: Route { self == .home ? .remote : .home }
}

/// What NetworkManager says of the network, as far as reaching a home server goes.
public enum NetworkState: String, Sendable, Equatable {
    /// Nothing heard (no NetworkManager): the bridge retries as if connected.
    case unknown
    case connected
    case disconnected

    /// NetworkManager's `State`/`StateChanged(u)`: connected to the local network, a site or the
    /// internet (50, 60, 70) is connected, since a home server needs no internet; asleep and
    /// disconnected (10, 20) are not; on the way (30, 40) and anything else say nothing new.
    /// https://networkmanager.dev/docs/api/latest/nm-dbus-types.html#NMState
    public init?(networkManager state: UInt32) {
        switch state {
        case 50, 60, 70: self = .connected
        case 10, 20: self = .disconnected
        default: return nil
        }
    }
}

extension BridgeTuning {
    /// How long the route in use fails until the other is taken, if it answers: a server
    /// restarting at home (the other route fails too, and the probe says so) vs. how long the
    /// music stops when the laptop leaves home.
    static let routeFailingMs = 5000
    /// The other route's probe starts this much earlier, so that its answer (Mopidy, then the
    /// stream's first bytes: about 0.6 s on the rig) is in when the 5 s are up.
    static let routeProbeLeadMs = 1500
    /// While the route in use keeps failing and the other does not answer either (the server is
    /// down), the other is probed again this often: one request, not a loop.
    static let routeProbeWhileFailingMs = 30_000
    /// On the remote route, home is probed this often (and on every network change): back home
    /// is noticed within a minute vs. a request a minute. At home nothing is probed.
    static let homeProbeMs = 60_000
}

/// The bridge's hold on the network: NetworkManager's state and the route, as one value inside
/// `BridgeState`. Only the reducer changes it.
public struct LinkState: Sendable, Equatable {
    public internal(set) var network = NetworkState.unknown
    public internal(set) var route = Route.home
    /// When the route was taken (monotonic ms); nil until the first input.
    public internal(set) var routeSinceMs: Int? = nil
    public internal(set) var routeReason = "the home network comes first"
    /// Where Mopidy may answer on the route in use, in order of preference: as the runner was
    /// given them at the start, then as each switch chose them; nil: the route's configured ones.
    public internal(set) var layouts: [MopidyEndpoints]? = nil
    /// Since when the route in use fails, and what is due next: one value, cleared at once.
    var due = RouteDue.nothing
    /// The other route's probe under way.
    var probing: Route? = nil
    /// On the remote route: home answered its last probe, so the bridge goes home at the next
    /// track change or while nothing plays here.
    public internal(set) var homeAnswered = false

    public init() {}
}

/// What the route waits for: the time the route in use began to fail and the deadlines that
/// follow from it, as one value, so that no deadline outlives the failure it belongs to.
enum RouteDue: Sendable, Equatable {
    /// The route works and nothing is due (at home; or home's probe is under way).
    case nothing
    /// The route works; the other is probed at `atMs` (on remote: home, every minute).
    case probe(atMs: Int)
    /// The route in use has failed continuously since `sinceMs` (events down, or the stream
    /// retrying); the other is probed at `probeAtMs` (nil: its probe is under way).
    case failing(sinceMs: Int, probeAtMs: Int?)
    /// The route in use fails since `sinceMs` and the other answered: taken at `atMs`, if the
    /// route in use still fails.
    case switchOver(sinceMs: Int, atMs: Int)

    var failingSinceMs: Int? {
        switch self {
        case .nothing, .probe: return nil
        case .failing(let since, _), .switchOver(let since, _): return since
        }
    }

    /// When the other route is probed next; nil: no probe due.
    var probeAtMs: Int? {
        switch self {
        case .probe(let at): return at
        case .failing(_, let at): return at
        case .nothing, .switchOver: return nil
        }
    }

    /// The earliest moment something is due (`BridgeState.nextDeadlineMs`).
    var atMs: Int? {
        if case .switchOver(_, let at) = self { return at }
        return probeAtMs
    }

    /// The other route is probed at `at` (a failing route stays failing). A switch that is due
    /// comes first: after it everything starts afresh.
    mutating func probe(atMs at: Int) {
        switch self {
        case .nothing, .probe: self = .probe(atMs: at)
        case .failing(let since, _): self = .failing(sinceMs: since, probeAtMs: at)
        case .switchOver: break
        }
    }

    /// The probe that was due is asked for (or one is under way already): it is due no more.
    mutating func probeTaken() {
        switch self {
        case .probe: self = .nothing
        case .failing(let since, _): self = .failing(sinceMs: since, probeAtMs: nil)
        case .nothing, .switchOver: break
        }
    }
}
