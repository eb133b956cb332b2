import Bridge
import DBus
import MPRIS
import Mopidy
import Net
import Support
@preconcurrency import Glibc

// `groove-bridge login`: asks for what is missing, checks it against the server, stores the
// password (the keyring, else a 0600 file), writes the rest of the configuration and reloads a
// running bridge. Everything it says goes to stdout; failures to stderr, exit status 1.

func runLogin(_ o: CommandLineOptions) -> Never {
    let env = currentEnvironment()
    let path = o.configPath ?? Config.defaultPath(environment: env)
    var c: Config
    do throws(ConfigError) {
        c = try ConfigLoader.load(path: path, required: o.configPath != nil)
        for (key, value) in o.settings { try c.set(key.name, value, origin: key.flag) }
    } catch { fail(error.message, code: 1) }
    let given = Set(o.settings.map(\.key.name))
    let ask: Prompter? = o.passwordStdin ? nil : Prompter.open()
    if !o.passwordStdin && ask == nil {
        fail("login: no terminal to ask on; give the password on standard input with --password-stdin", code: 2)
    }

    if c.host == nil && c.effectiveStreamURL == nil {
        guard let ask else { fail("login: no server configured: give --host HOST (or --stream-url, --rpc-url and --ws-url)", code: 2) }
        let host = ask.line("Groove Audio server (host name or address): ")
        do throws(ConfigError) { try c.set("host", host, origin: "host") } catch { fail(error.message, code: 1) }
    }
    if let ask, !given.contains("user") {
        let user = ask.line("User [\(c.user)]: ")
        if !user.isEmpty {
            do throws(ConfigError) { try c.set("user", user, origin: "user") } catch { fail(error.message, code: 1) }
        }
    }
    TLSTrust.use(caFile: c.caFile)
    guard let streamURL = c.effectiveStreamURL else { fail("login: no stream URL: give --host or --stream-url", code: 2) }

    // The password, checked against the stream: asked again (twice at most) when refused.
    var password = ""
    for attempt in 1...3 {
        if let ask {
            password = ask.secret("Password for \(c.signInAccount): ")
        } else {
            password = readLine(from: 0)
        }
        guard !password.isEmpty else { fail("login: no password given", code: 1) }
        Log.addSecret(password)
        switch LoginCheck.stream(url: streamURL, user: c.user, password: password) {
        case .success(let kind):
            print("login: the stream at \(redactedURL(streamURL)) takes the password (\(kind == .oggFLAC ? "Ogg FLAC" : "FLAC"))")
        case .failure(let f):
            if f.refused && ask != nil && attempt < 3 {
                print("login: \(f.message); try again")
                continue
            }
            fail("login: \(f.message); nothing is stored", code: 1)
        }
        break
    }
    switch LoginCheck.mopidy(layouts(c)) {
    case .success(let (layout, version)): print("login: Mopidy \(version) answers at \(layout.rpcURL)")
    case .failure(let f): fail("login: Mopidy does not answer: \(f.message); nothing is stored", code: 1)
    }

    // Where the password goes; the password lines that would win over the keyring are retired.
    var settings = ConfigKey.all.filter { given.contains($0.name) && $0.form != .secret }
        .compactMap { k in o.settings.last { $0.key.name == k.name }.map { (key: k.name, value: $0.value) } }
    if !given.contains("host"), let h = c.host, c.streamURL == nil { settings.append((key: "host", value: h)) }
    if !given.contains("user") { settings.append((key: "user", value: c.user)) }
    var retired: Set<String> = ["password_command"]
    switch storeInKeyring(user: c.user, password: password) {
    case .stored:
        retired.insert("password")
        print("login: the password is in the keyring (service groove-audio, user \(c.user))")
    case .noKeyring(let why):
        guard password.first?.isWhitespace == false, password.last?.isWhitespace == false else {
            fail("login: no keyring (\(why)), and this password cannot be written to a file (it begins or ends with a space)", code: 1)
        }
        settings.append((key: "password", value: password))
        print("login: no keyring to keep the password in (\(why)): it is written to \(path), which only you can read (mode 600)")
    case .failed(let why):
        fail("login: the keyring did not take the password: \(why); nothing is stored", code: 1)
    }
    let old = ConfigFile.text(at: path)
    let text = ConfigFile.edited(old, set: settings, commentOut: retired, why: "groove-bridge login: the password is kept elsewhere")
    do throws(ConfigError) { try ConfigFile.write(text, to: path) } catch { fail("login: \(error.message)", code: 1) }
    print("login: configuration written to \(path)")
    if env["GROOVE_PASSWORD"].map({ !$0.isEmpty }) == true {
        print("login: note: GROOVE_PASSWORD is set in this environment, and wins over the stored password where it is set")
    }
    reloadRunningBridge()
    exit(0)
}

enum KeyringStore { case stored, noKeyring(String), failed(String) }

func storeInKeyring(user: String, password: String) -> KeyringStore {
    do throws(DBusFailure) {
        try Keyring.store(user: user, password: password)
        return .stored
    } catch {
        // No Secret Service on this bus (none installed, or no session bus at all): the file.
        let absent = ["org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner",
                      "org.freedesktop.DBus.Error.NoServer", "org.freedesktop.DBus.Error.FileNotFound",
                      "org.freedesktop.DBus.Error.NotSupported", "org.freedesktop.DBus.Error.Spawn.ServiceNotFound",
                      "org.freedesktop.DBus.Error.Disconnected"]
        return absent.contains(error.name) ? .noKeyring(error.message) : .failed(error.message)
    }
}

/// SIGHUP to the bridge that owns the MPRIS name on this session bus, as `systemctl --user
/// reload` would send.
func reloadRunningBridge() {
    do throws(DBusFailure) {
        let bus = try DBusConnection()
        guard let owner = bus.owner(of: MPRISService.busName) else {
            print("login: no groove-bridge is running; start it with: systemctl --user start groove-bridge")
            return
        }
        let reply = try bus.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                 interface: "org.freedesktop.DBus", member: "GetConnectionUnixProcessID",
                                 args: [.string(owner)])
        guard case .uint32(let pid)? = reply.first, pid > 1, let p = pid_t(exactly: pid) else {
            print("login: the running groove-bridge did not say its process; reload it: systemctl --user reload groove-bridge")
            return
        }
        if kill(p, SIGHUP) == 0 {
            print("login: the running groove-bridge (pid \(p)) reloads its configuration")
        } else {
            print("login: cannot reload the running groove-bridge (pid \(p)): \(String(cString: strerror(errno)))")
        }
    } catch {
        print("login: no session bus, so no running groove-bridge to reload (\(error.message))")
    }
}
