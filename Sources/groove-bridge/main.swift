import Mopidy
import Net
import Support
@preconcurrency import Glibc

// First stage: follow Mopidy and log what is playing. Configuration and MPRIS come next.
final class Follower: MopidyEventStreamDelegate {
    let client: MopidyClient
    init(client: MopidyClient) { self.client = client }

    func eventStreamConnected(url: String) {
        do throws(MopidyError) {
            let current = try client.currentTlTrack()
            let state = try client.state()
            Log.info("now playing: \(describe(current?.track)) [\(state.rawValue)]")
        } catch { Log.warning("\(error)") }
    }
    func eventStreamReceived(_ event: MopidyEvent) {
        if case .trackPlaybackStarted(let tl) = event { Log.info("now playing: \(describe(tl.track))") }
        else { Log.debug("event: \(event)") }
    }
    func eventStreamDisconnected(reason: String, retryInMs: Int) {}

    func describe(_ t: Track?) -> String {
        guard let t else { return "nothing" }
        return "\(t.artists.joined(separator: ", ")) – \(t.name ?? t.uri)"
    }
}

var rpc = "", ws = ""
var args = CommandLine.arguments.dropFirst().makeIterator()
while let a = args.next() {
    switch a {
    case "--rpc-url": rpc = args.next() ?? ""
    case "--ws-url": ws = args.next() ?? ""
    case "--verbose": Log.setLevel(.debug)
    default: Log.error("unknown argument \(a)"); exit(2)
    }
}
let client = MopidyClient(endpoints: MopidyEndpoints(rpcURL: rpc, wsURL: ws))
let stream = MopidyEventStream(url: ws, delegate: Follower(client: client))
stream.start()
while true { pause() }
