import Audio
import Bridge
import DBus
import MPRIS
import Mopidy
import Net
import Support
@preconcurrency import Glibc

// groove-bridge: configuration, signals, wiring — nothing else.

let version = "0.2.0"

/// One option line of `--help`: the option, then what it does, in a column.
func optionLine(_ option: String, _ help: String) -> String {
    help.isEmpty ? "  " + option : "  " + option + String(repeating: " ", count: max(1, 25 - option.count)) + help
}

let usage = """
    Usage: groove-bridge [options]          run the bridge: MPRIS player org.mpris.MediaPlayer2.groove
           groove-bridge status [--json]    ask the running bridge how it is doing
           groove-bridge login [options] [--password-stdin]
                                            sign in: check the password against the server, keep
                                            it in the keyring, write the configuration, reload

    Options (each also a key in the configuration file, with _ for -; options win over the file;
    --key VALUE or --key=VALUE; a true|false key alone means true):
    \(ConfigKey.all.compactMap { k in k.commandLineUsage.map { optionLine($0, k.helpWithDefault) } }.joined(separator: "\n"))

    Other options:
    \(optionLine("--config PATH", "configuration file (default $XDG_CONFIG_HOME/groove-bridge/config)"))
    \(optionLine("--instance", "run beside another bridge (as org.mpris.MediaPlayer2.groove.instance<pid>)"))
    \(optionLine("--verbose", "debug logging"))
    \(optionLine("--help, --version", ""))

    With --host alone, the stream is http://HOST:8000/stream.flac and Mopidy answers at
    http://HOST:8180/api/mopidy/rpc (Groove Audio) or http://HOST:6680/mopidy/rpc (plain Mopidy).

    The password is never taken on the command line: GROOVE_PASSWORD in the environment,
    password_command, `password = …` in a configuration file only you can read (chmod 600),
    or the keyring (service groove-audio, user USER), where groove-bridge login puts it.

    Exit codes: 0 done (Quit, SIGTERM, SIGINT, session bus closed, or a bridge already runs),
    1 cannot start (configuration, bus), 2 bad command line.
    SIGHUP reloads the configuration file.
    """

func fail(_ message: String, code: Int32) -> Never {
    Log.error(message)
    exit(code)
}

struct CommandLineOptions {
    var configPath: String?
    var settings: [(key: ConfigKey, value: String)] = []
    var status = false
    var json = false
    var instance = false
    var login = false
    var passwordStdin = false
}

func parseCommandLine(_ argv: [String]) -> CommandLineOptions {
    var o = CommandLineOptions()
    var i = 0
    func value(_ flag: String) -> String {
        i += 1
        guard i < argv.count else { fail("\(flag) needs a value; see --help", code: 2) }
        return argv[i]
    }
    while i < argv.count {
        let a = argv[i]
        switch a {
        case "status": o.status = true
        case "--json": o.json = true
        case "login": o.login = true
        case "--password-stdin": o.passwordStdin = true
        case "--config": o.configPath = value(a)
        case "--verbose", "-v": Log.setLevel(.debug)
        case "--instance": o.instance = true
        case "--help", "-h": print(usage); exit(0)
        case "--version": print("groove-bridge \(version) (\(curlVersion()))"); exit(0)
        default:
            let setting: (key: ConfigKey, value: String, next: Int)?
            do throws(ConfigError) { setting = try ConfigFlags.read(argv, at: i) } catch { fail(error.message, code: 2) }
            guard let setting else {
                // Nothing after '=': it may be a secret given to a mistyped flag (--pasword=…).
                let flag = a.firstIndex(of: "=").map { String(a[..<$0]) } ?? a
                fail("unknown argument '\(flag == a ? a : flag + "=…")'; see --help", code: 2)
            }
            o.settings.append((setting.key, setting.value))
            i = setting.next
            continue
        }
        i += 1
    }
    return o
}

func currentEnvironment() -> [String: String] {
    var env: [String: String] = [:]
    var p = environ
    while let entry = p.pointee {
        let s = String(cString: entry)
        if let eq = s.firstIndex(of: "=") { env[String(s[..<eq])] = String(s[s.index(after: eq)...]) }
        p += 1
    }
    return env
}

/// The file, then the flags, then the password from the environment or its command.
func loadConfig(_ o: CommandLineOptions) throws(ConfigError) -> Config {
    let env = currentEnvironment()
    let path = o.configPath ?? Config.defaultPath(environment: env)
    var c = try ConfigLoader.load(path: path, required: o.configPath != nil)
    for (key, value) in o.settings { try c.set(key.name, value, origin: key.flag) }
    try c.checkRoutes()
    try ConfigLoader.resolvePassword(&c, environment: env)
    return c
}

/// Where Mopidy answers at home (`Config.homeLayouts`), or why the bridge cannot start.
func layouts(_ c: Config) -> [MopidyEndpoints] {
    guard let layouts = c.homeLayouts else {
        fail("no server configured: set host (or rpc_url and ws_url) in \(Config.defaultPath(environment: currentEnvironment())) "
             + "or give --host; `scripts/demo` runs one on loopback", code: 1)
    }
    return layouts
}

func runStatus(json: Bool) -> Never {
    do throws(DBusFailure) {
        let bus = try DBusConnection()
        let reply = try bus.call(destination: MPRISService.busName, path: MPRISInterface.objectPath,
                                 interface: MPRISService.statusInterface, member: "Status")
        guard let text = reply.first?.stringValue else { fail("the bridge sent no status", code: 1) }
        // Titles and errors come from the server: nothing in them may act on the terminal.
        guard case .object(let o)? = try? JSON.parse(text) else { print(terminalSafe(text)); exit(0) }
        if json { print(JSON.object(o).serialized()); exit(0) }
        let width = (o.keys.map(\.count).max() ?? 0) + 2
        for k in o.keys.sorted() {
            let v = o[k]!
            let label = terminalSafe(k.replacingText("_", with: " ")) + ":"
            print(label + String(repeating: " ", count: max(1, width - label.count)) + terminalSafe(v.string ?? v.serialized()))
        }
        exit(0)
    } catch {
        fail("no groove-bridge is running on the session bus (\(error.message))", code: 1)
    }
}

returnLargeBlocksToTheSystem()

// Before anything reads the password: no core dump or ptrace of a process that holds it.
if let why = forbidCoreDumps() { Log.warning("core dumps stay allowed: \(why)") }

let options = parseCommandLine(Array(CommandLine.arguments.dropFirst()))
if options.status { runStatus(json: options.json) }
if options.login { runLogin(options) }

// Signals are taken synchronously by the main thread (sigwait), so no handler runs in an
// arbitrary thread; every other thread is started after the mask is set and inherits it. Set
// before the configuration is read, so a stop asked for while password_command runs is an
// orderly one once the bridge is up (children start with an empty mask). `status` and `login`
// (above) keep the default actions: Ctrl-C ends them at once.
var signals = sigset_t()
sigemptyset(&signals)
for s in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&signals, s) }
pthread_sigmask(SIG_BLOCK, &signals, nil)
signal(SIGPIPE, SIG_IGN)

let config: Config
do throws(ConfigError) { config = try loadConfig(options) } catch { fail(error.message, code: 1) }
Log.debug("configuration: \(config)")
TLSTrust.use(caFile: config.caFile)
// Once here, and on a reload only when it says something new: never per reconnect.
var passwordWarning = config.unencryptedPasswordWarning
if let passwordWarning { Log.warning(passwordWarning) }

// Before any thread starts: setenv is not safe against other threads' getenv.
PulseSink.prepareEnvironment()

let bus: DBusConnection
do throws(DBusFailure) { bus = try DBusConnection() } catch {
    fail("cannot connect to the session bus: \(error.message)", code: 1)
}
let mainThread = pthread_self()
nonisolated(unsafe) var stopping = false  // written by the main thread before bus.stop()
let artDirectory = ArtCache.defaultDirectory(environment: currentEnvironment())
if artDirectory == nil { Log.info("no cover art: neither XDG_CACHE_HOME nor HOME is set, so there is no cache for it") }
let bridge = Bridge(config: config, layouts: layouts(config), artDirectory: artDirectory ?? "", onQuit: {
    Log.info("Quit requested over MPRIS")
    pthread_kill(mainThread, SIGTERM)
})
do throws(DBusFailure) {
    guard let name = try bridge.start(connection: bus, allowInstance: options.instance) else {
        // Only one bridge per user and server: the one already running serves the desktop.
        Log.info("a groove-bridge already owns \(MPRISService.busName); nothing to do (use --instance to run another)")
        exit(0)
    }
    Log.info("serving \(name) for \(bridge.client.endpoints.rpcURL)")
    SystemBusWatcher.start(bridge)
} catch {
    fail("cannot publish on the session bus: \(error.message)", code: 1)
}
bus.start(onDisconnect: {
    guard !stopping else { return }
    // The session bus ending means the session ended.
    Log.info("the session bus went away; exiting")
    pthread_kill(mainThread, SIGTERM)
})

while true {
    var sig: Int32 = 0
    sigwait(&signals, &sig)
    if sig == SIGHUP {
        do throws(ConfigError) {
            let new = try loadConfig(options)
            TLSTrust.use(caFile: new.caFile)
            if let w = new.unencryptedPasswordWarning, w != passwordWarning { Log.warning(w) }
            passwordWarning = new.unencryptedPasswordWarning
            bridge.reload(new)
        } catch {
            Log.error("configuration not reloaded: \(error.message)")
        }
        continue
    }
    Log.info("stopping (signal \(sig))")
    stopping = true
    bridge.shutdown()
    // Let the D-Bus thread send what it has (the reply to a Quit) and release the name.
    bus.stop(waitMs: 1000)
    // Other threads may still be inside libcurl or OpenSSL (a cover download, a reconnect):
    // exit's handlers would free OpenSSL's locks under them, a SIGSEGV in pthread_rwlock_rdlock
    // on the way out. Nothing is left to write but stdio's buffers.
    fflush(nil)
    _exit(0)
}
