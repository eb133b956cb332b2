import Bridge
import DBus
import MPRIS
import Mopidy
import Net
import Support
@preconcurrency import Glibc

// groove-bridge: configuration, signals, wiring — nothing else.

let version = "0.1.0"
let usage = """
    Usage: groove-bridge [options]          run the bridge (MPRIS player org.mpris.MediaPlayer2.groove)
           groove-bridge status [--json]    ask the running bridge how it is doing

    Options:
      --host HOST        the Groove Audio server; tries http://HOST:8180/api/mopidy/rpc (Groove
                         layout), then http://HOST:6680/mopidy/rpc (plain Mopidy)
      --rpc-url URL      Mopidy JSON-RPC URL (wins over --host)
      --ws-url URL       Mopidy WebSocket URL (wins over --host)
      --verbose          debug logging
      --help, --version

    Exit codes: 0 done (Quit, SIGTERM, SIGINT, session bus closed), 1 cannot start (no bus, no
    server configured), 2 bad command line.
    """

struct Options {
    var host: String?
    var rpcURL: String?
    var wsURL: String?
    var status = false
    var json = false
}

func fail(_ message: String, code: Int32) -> Never {
    Log.error(message)
    exit(code)
}

func parse(_ argv: [String]) -> Options {
    var o = Options()
    var it = argv.makeIterator()
    func value(_ flag: String) -> String {
        guard let v = it.next(), !v.hasPrefix("--") else { fail("\(flag) needs a value", code: 2) }
        return v
    }
    while let a = it.next() {
        switch a {
        case "--host": o.host = value(a)
        case "--rpc-url": o.rpcURL = value(a)
        case "--ws-url": o.wsURL = value(a)
        case "--verbose", "-v": Log.setLevel(.debug)
        case "--json": o.json = true
        case "status": o.status = true
        case "--help", "-h": print(usage); exit(0)
        case "--version": print("groove-bridge \(version) (\(curlVersion()))"); exit(0)
        default: fail("unknown argument '\(a)'; see --help", code: 2)
        }
    }
    return o
}

/// Explicit URLs win; from a host alone, the Groove layout first, then plain Mopidy.
func endpoints(_ o: Options) -> MopidyEndpoints {
    if let rpc = o.rpcURL, let ws = o.wsURL { return MopidyEndpoints(rpcURL: rpc, wsURL: ws) }
    guard let host = o.host else {
        fail("no server configured: give --host HOST or --rpc-url and --ws-url (see --help)", code: 1)
    }
    let candidates = [MopidyEndpoints.groove(host: host), MopidyEndpoints.plain(host: host)]
    for c in candidates {
        let probe = MopidyClient(endpoints: c, timeouts: HTTPTimeouts(connectMs: 2000, totalMs: 3000))
        if let v = try? probe.version() {
            Log.info("Mopidy \(v) answers at \(c.rpcURL)")
            return MopidyEndpoints(rpcURL: o.rpcURL ?? c.rpcURL, wsURL: o.wsURL ?? c.wsURL)
        }
    }
    Log.warning("no Mopidy answers at \(host) yet; will keep trying the Groove layout")
    let g = candidates[0]
    return MopidyEndpoints(rpcURL: o.rpcURL ?? g.rpcURL, wsURL: o.wsURL ?? g.wsURL)
}

func runStatus(json: Bool) -> Never {
    do throws(DBusFailure) {
        let bus = try DBusConnection()
        var reply: [DBusValue] = []
        for name in [MPRISService.busName] {
            reply = try bus.call(destination: name, path: MPRISInterface.objectPath,
                                 interface: MPRISService.statusInterface, member: "Status")
        }
        guard let text = reply.first?.stringValue else { fail("the bridge sent no status", code: 1) }
        if json { print(text); exit(0) }
        guard case .object(let o)? = try? JSON.parse(text) else { print(text); exit(0) }
        for k in o.keys.sorted() {
            let v = o[k]!
            print("\(k.replacing("_", with: " ")): \(v.string ?? v.serialized())")
        }
        exit(0)
    } catch {
        fail("no running groove-bridge on the session bus (\(error.message))", code: 1)
    }
}

let options = parse(Array(CommandLine.arguments.dropFirst()))
if options.status { runStatus(json: options.json) }

// Signals are taken synchronously by the main thread (sigwait), so no handler runs in an
// arbitrary thread; every other thread is started after the mask is set and inherits it.
var signals = sigset_t()
sigemptyset(&signals)
for s in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&signals, s) }
pthread_sigmask(SIG_BLOCK, &signals, nil)
signal(SIGPIPE, SIG_IGN)

let bus: DBusConnection
do throws(DBusFailure) { bus = try DBusConnection() } catch {
    fail("cannot connect to the session bus: \(error.message)", code: 1)
}
let mainThread = pthread_self()
nonisolated(unsafe) var stopping = false  // written by the main thread before bus.stop()
let bridge = Bridge(endpoints: endpoints(options), onQuit: {
    Log.info("Quit requested over MPRIS")
    pthread_kill(mainThread, SIGTERM)
})
do throws(DBusFailure) { try bridge.start(connection: bus) } catch {
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
        Log.info("SIGHUP: nothing to reload yet")
        continue
    }
    Log.info("stopping (signal \(sig))")
    stopping = true
    bridge.shutdown()
    bus.stop()
    exit(0)
}
