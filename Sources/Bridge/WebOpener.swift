import DBus
import Glibc
import Support

/// Raise: the server's web interface, opened by the desktop and never as a child of the bridge.
/// The bridge's unit gives it a system-call filter and MemoryDenyWriteExecute, and a child
/// inherits both: a browser (whose JavaScript engine writes code it then runs) dies under them.
/// So the URL goes, in this order, to
///  1. the desktop portal's OpenURI (org.freedesktop.portal.Desktop on the session bus), which
///     opens it in the user's browser, from outside the bridge;
///  2. `systemd-run --user --collect --quiet xdg-open URL`: systemd-run only asks the user's
///     service manager over D-Bus, which starts xdg-open in a unit of its own, outside the
///     bridge's restrictions.
/// The log says which one opened it.
public enum WebOpener {
    static let portal = (name: "org.freedesktop.portal.Desktop", path: "/org/freedesktop/portal/desktop",
                         interface: "org.freedesktop.portal.OpenURI")

    public enum Way: Equatable, Sendable {
        case portal
        /// systemd-run, at this path.
        case serviceManager(String)
    }

    /// How a URL can be opened from here, best first; empty when neither can (then CanRaise is
    /// false). `busAddress` nil: the session bus.
    public static func ways(busAddress: String? = nil) -> [Way] {
        var out: [Way] = []
        if portalPresent(busAddress: busAddress) { out.append(.portal) }
        if let run = findExecutable("systemd-run"), userManagerRuns() { out.append(.serviceManager(run)) }
        return out
    }

    /// Whether the portal's name has an owner on the bus or can be activated there.
    static func portalPresent(busAddress: String?) -> Bool {
        guard let bus = try? DBusConnection(address: busAddress) else { return false }
        if bus.owner(of: portal.name) != nil { return true }
        let names = try? bus.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                  interface: "org.freedesktop.DBus", member: "ListActivatableNames")
        guard case .array("s", let list)? = names?.first else { return false }
        return list.contains { $0.stringValue == portal.name }
    }

    /// Whether a user service manager listens: the private socket `systemctl --user` and
    /// `systemd-run --user` reach it by, in XDG_RUNTIME_DIR.
    static func userManagerRuns() -> Bool {
        guard let runtime = getenv("XDG_RUNTIME_DIR").map({ String(cString: $0) }), runtime.hasPrefix("/") else {
            return false
        }
        var st = stat()
        return stat(runtime + "/systemd/private", &st) == 0 && (st.st_mode & S_IFMT) == S_IFSOCK
    }

    /// Opens `url` on a thread of its own (the portal may first be started by D-Bus), trying
    /// `ways` in order; logs which opened it, or why none did.
    public static func open(_ url: String, ways: [Way], busAddress: String? = nil) {
        startThread(name: "raise") {
            var failures: [String] = []
            for way in ways {
                switch attempt(url, way, busAddress: busAddress) {
                case nil:
                    Log.info("raise: opened \(url) \(describe(way))")
                    return
                case let why?: failures.append("\(describe(way)): \(why)")
                }
            }
            let why = failures.isEmpty ? "no portal and no user service manager" : failures.joined(separator: "; ")
            Log.warning("raise: could not open \(url): \(why)")
        }
    }

    static func describe(_ way: Way) -> String {
        switch way {
        case .portal: "through the desktop portal (OpenURI)"
        case .serviceManager: "through systemd-run --user (xdg-open in a unit of its own)"
        }
    }

    /// nil when it opened, else why not.
    static func attempt(_ url: String, _ way: Way, busAddress: String?) -> String? {
        switch way {
        case .portal:
            do throws(DBusFailure) {
                let bus = try DBusConnection(address: busAddress)
                // OpenURI(s parent_window, s uri, a{sv} options) → o handle; no parent window.
                let reply = try bus.call(destination: portal.name, path: portal.path, interface: portal.interface,
                                         member: "OpenURI", args: [.string(""), .string(url), .vardict([])],
                                         timeoutMs: 25_000)
                guard reply.first?.objectPathValue != nil else { return "OpenURI answered \(reply.map(\.signature))" }
                return nil
            } catch {
                return error.description
            }
        case .serviceManager(let run):
            switch runCommand([run, "--user", "--collect", "--quiet", "xdg-open", url], timeoutMs: 15_000, outputLimit: 0) {
            case .failure(let e): return e.message
            case .success(let r):
                switch r.end {
                case .exited(0): return nil
                case .exited(let code): return "systemd-run exited with \(code)"
                case .killedBy(let signal): return "systemd-run was killed by signal \(signal)"
                case .timedOut: return "systemd-run did not finish within 15 s"
                }
            }
        }
    }
}
