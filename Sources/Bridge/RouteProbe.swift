import Audio
import Mopidy
import Net
import Support

/// Does a route answer? Mopidy's JSON-RPC (`core.get_version`) through one of its layouts, then,
/// when there is a stream, the stream's first bytes with the listener's password: a route whose
/// front end answers while Icecast behind it is down (the server restarting) does not count, so
/// the bridge does not move to a route that fails the same way. Blocking, a few seconds at most;
/// runs on "route-probe".
enum RouteProbe {
    /// Short: a route that takes longer than this to answer a probe is not one to move to.
    static let timeouts = HTTPTimeouts(connectMs: 2000, totalMs: 3000)
    static let streamStallSeconds = 3

    /// Whether the route answers, and if not why.
    static func run(_ layouts: [MopidyEndpoints], stream: StreamConfig?) -> (Bool, String) {
        var failures: [String] = []
        var mopidy = false
        for layout in layouts {
            do throws(MopidyError) {
                // A client of its own: the bridge's may hold a kept-alive connection elsewhere.
                _ = try MopidyClient(endpoints: layout, timeouts: timeouts).version()
                mopidy = true
                break
            } catch {
                failures.append(error.description)
            }
        }
        guard mopidy else { return (false, failures.joined(separator: "; ")) }
        guard let stream else { return (true, "") }
        var options = StreamingGet.Options(user: stream.user, password: stream.password)
        options.connectTimeoutMs = timeouts.connectMs
        options.stallSeconds = streamStallSeconds
        let first = FirstBytes()
        let url = redactedURL(stream.url)
        switch StreamingGet().perform(url: stream.url, options: options, delegate: first) {
        case .stoppedByConsumer where first.status == 200: return (true, "")
        case .httpStatus(let code): return (false, "stream at \(url): HTTP \(code)")
        case .stalled(let seconds): return (false, "stream at \(url): no data for \(seconds) s")
        case .failed(let why), .untrusted(let why): return (false, "stream at \(url): \(why)")
        case .finished, .stoppedByConsumer: return (false, "stream at \(url): no audio (HTTP \(first.status))")
        }
    }

    /// Stops the transfer at the first bytes of the body, keeping the status.
    final class FirstBytes: StreamingGetDelegate {
        var status = 0
        func streamResponse(status: Int, contentType: String?) -> Bool {
            self.status = status
            return false
        }
        func streamData(_ bytes: UnsafeRawBufferPointer) -> Bool { false }
        func streamShouldAbort() -> Bool { false }
    }
}
