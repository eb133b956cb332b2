import DBus
import Support

/// What the system bus tells the bridge.
public enum SystemBusEvent: Sendable, Equatable {
    /// logind's PrepareForSleep: true as sleep comes, false once awake.
    case sleeping(Bool)
    case network(NetworkState)
    /// What is followed and what not, for `status`.
    case report(String)

    static let login1 = (name: "org.freedesktop.login1", path: "/org/freedesktop/login1",
                         interface: "org.freedesktop.login1.Manager", member: "PrepareForSleep")
    static let networkManager = (name: "org.freedesktop.NetworkManager", path: "/org/freedesktop/NetworkManager",
                                 interface: "org.freedesktop.NetworkManager", member: "StateChanged")

    /// The event a signal carries, or nil: another signal, or arguments of the wrong type or
    /// number (anyone on the bus may send anything; only the names' owners' signals are matched,
    /// and even theirs are checked).
    static func from(path: String, interface: String, member: String, args: [DBusValue]) -> SystemBusEvent? {
        switch (path, interface, member, args) {
        case (login1.path, login1.interface, login1.member, let a) where a.count == 1:
            return a[0].boolValue.map(SystemBusEvent.sleeping)
        case (networkManager.path, networkManager.interface, networkManager.member, let a) where a.count == 1:
            guard case .uint32(let state) = a[0] else { return nil }
            return NetworkState(networkManager: state).map(SystemBusEvent.network)
        default:
            return nil
        }
    }

    /// The match rule of a signal from the owner of a well-known name.
    static func matchRule(sender: String, path: String, interface: String, member: String) -> String {
        "type='signal',sender='\(sender)',path='\(path)',interface='\(interface)',member='\(member)'"
    }
}

/// Follows suspend (logind) and the network (NetworkManager) on the system bus, reached through
/// `DBUS_SYSTEM_BUS_ADDRESS` or the system's socket. Its thread, "system-bus", sleeps in poll(2)
/// with no timeout and hands each signal to the bridge as an input. Without a system bus, or
/// without logind or NetworkManager on it, it says so once and the bridge works as it does
/// without them (retrying on its schedule).
public enum SystemBusWatcher {
    /// How long NetworkManager may take to say its state at start.
    static let callTimeoutMs: Int32 = 2000

    public static func start(_ bridge: Bridge) {
        startThread(name: "system-bus") { run(bridge) }
    }

    static func run(_ bridge: Bridge) {
        let bus: DBusConnection
        do throws(DBusFailure) { bus = try DBusConnection(bus: .system) } catch {
            say("no system bus (\(error.message)): suspend and network changes are not followed", bridge)
            return
        }
        let login1 = SystemBusEvent.login1, nm = SystemBusEvent.networkManager
        do throws(DBusFailure) {
            try bus.addMatch(SystemBusEvent.matchRule(sender: login1.name, path: login1.path, interface: login1.interface,
                                                      member: login1.member))
            try bus.addMatch(SystemBusEvent.matchRule(sender: nm.name, path: nm.path, interface: nm.interface,
                                                      member: nm.member))
        } catch {
            say("the system bus refused to pass on signals (\(error.message)): suspend and network changes are not followed", bridge)
            return
        }
        var said: [String] = []
        said.append(bus.owner(of: login1.name) == nil ? "logind is not on the system bus: suspend and resume are not followed"
                                                      : "suspend and resume followed (logind)")
        if bus.owner(of: nm.name) == nil {
            said.append("NetworkManager is not on the system bus: network changes are not followed")
        } else {
            said.append("network changes followed (NetworkManager)")
            let reply = try? bus.call(destination: nm.name, path: nm.path, interface: "org.freedesktop.DBus.Properties",
                                      member: "Get", args: [.string(nm.interface), .string("State")], timeoutMs: callTimeoutMs)
            if case .uint32(let state)? = reply?.first?.variantValue, let n = NetworkState(networkManager: state) {
                bridge.systemBusSaid(.network(n))
            }
        }
        say(said.joined(separator: "; "), bridge)
        while let signal = bus.nextSignal(timeoutMs: nil) {
            guard let event = SystemBusEvent.from(path: signal.path, interface: signal.interface, member: signal.member,
                                                  args: signal.args) else { continue }
            Log.debug("system bus: \(signal.member) \(signal.args)")
            bridge.systemBusSaid(event)
        }
        say("the system bus is gone: suspend and network changes are not followed from here on", bridge)
    }

    private static func say(_ text: String, _ bridge: Bridge) {
        Log.info(text)
        bridge.systemBusSaid(.report(text))
    }
}
