import Net
import Support
import Synchronization

/// What the event stream tells its owner. Called on the stream's own thread ("mopidy-events"):
/// the owner must hand the work on and return quickly.
public protocol MopidyEventStreamDelegate: AnyObject, Sendable {
    /// The socket to `url` (one of the stream's URLs, as given) is up; the owner should fetch the
    /// full state now (events missed while disconnected are lost, so nothing may stay stale).
    func eventStreamConnected(url: String)
    func eventStreamReceived(_ event: MopidyEvent)
    /// The socket went down; it will be retried in `retryInMs`.
    func eventStreamDisconnected(reason: String, retryInMs: Int)
}

/// Follows Mopidy's events over its WebSocket, reconnecting with capped exponential backoff and
/// jitter for as long as it runs. One thread, "mopidy-events", blocked in poll(2) while idle.
///
/// Given several URLs (the layouts a host may serve), each attempt tries them in order and takes
/// the first that completes the handshake; the owner learns which from `eventStreamConnected`.
/// So a server that was down when the bridge started is found in whichever layout it comes back.
public final class MopidyEventStream: Sendable {
    public let urls: [String]
    private let delegate: MopidyEventStreamDelegate
    private let state = Mutex(State())
    private let waker = Waker()
    private let messageLimit: Int
    private let connectTimeoutMs: Int

    private struct State {
        var running = false
        var connection: WebSocketConnection? = nil
    }

    public convenience init(url: String, delegate: MopidyEventStreamDelegate, messageLimit: Int = MopidyLimits.eventBytes,
                            connectTimeoutMs: Int = 5000)
    {
        self.init(urls: [url], delegate: delegate, messageLimit: messageLimit, connectTimeoutMs: connectTimeoutMs)
    }

    public init(urls: [String], delegate: MopidyEventStreamDelegate, messageLimit: Int = MopidyLimits.eventBytes,
                connectTimeoutMs: Int = 5000)
    {
        precondition(!urls.isEmpty, "MopidyEventStream needs a URL")
        self.urls = urls
        self.delegate = delegate
        self.messageLimit = messageLimit
        self.connectTimeoutMs = connectTimeoutMs
    }

    public func start() {
        let already = state.withLock { s in
            defer { s.running = true }
            return s.running
        }
        guard !already else { return }
        startThread(name: "mopidy-events") { [self] in run() }
    }

    /// Stops the thread: wakes it from a wait or a blocked read.
    public func stop() {
        let conn = state.withLock { s -> WebSocketConnection? in
            s.running = false
            return s.connection
        }
        conn?.interrupt()
        waker.wake()
    }

    private var running: Bool { state.withLock { $0.running } }

    private func run() {
        var backoff = Backoff()
        while running {
            let (connection, failure) = connectFirst()
            var reason = failure
            if let (conn, url) = connection {
                state.withLock { $0.connection = conn }
                Log.info("events: connected to \(conn.url)")
                let since = monotonicMs()
                delegate.eventStreamConnected(url: url)
                let (why, delivered) = readLoop(conn)
                reason = why
                // Only a connection that proved healthy resets the backoff: a server that accepts
                // and then breaks every socket must not be retried at the fastest rate forever.
                if delivered > 0 || monotonicMs() - since >= 10_000 { backoff.reset() }
                state.withLock { $0.connection = nil }
                conn.closeGracefully(timeoutMs: 200)
            }
            guard running else { break }
            let delay = backoff.nextDelayMs()
            Log.warning("events: \(reason); retrying in \(Double(delay) / 1000) s")
            delegate.eventStreamDisconnected(reason: reason, retryInMs: delay)
            waker.sleep(ms: delay)
        }
    }

    /// A connection to the first URL that completes the handshake, or why none did (every URL's
    /// error, so a log line shows each layout that was tried).
    private func connectFirst() -> ((WebSocketConnection, String)?, String) {
        var failures: [String] = []
        for url in urls where running {
            do throws(WebSocketError) {
                return ((try WebSocketConnection(url: url, timeoutMs: connectTimeoutMs, messageLimit: messageLimit,
                                                 skipLimit: MopidyLimits.skippedEventBytes), url), "")
            } catch {
                failures.append(error.description)
            }
        }
        return (nil, failures.isEmpty ? "stopped" : failures.joined(separator: "; "))
    }

    /// Reads until the connection breaks; returns why, and how many events it delivered.
    private func readLoop(_ conn: WebSocketConnection) -> (String, Int) {
        var delivered = 0
        while true {
            let message: WebSocketMessage
            do throws(WebSocketError) { message = try conn.receive() } catch {
                switch error {
                case .interrupted: return ("disconnected on request", delivered)
                case .protocolViolation(let url, .messageTooLarge):
                    return ("\(url) sent a message larger than \(byteCount(MopidyLimits.skippedEventBytes)), more than "
                            + "any Mopidy event", delivered)
                default: return (error.description, delivered)
                }
            }
            if case .skipped(let bytes) = message {
                Log.warning("events: skipped a message of \(byteCount(bytes)) from \(conn.url), over the "
                            + "\(byteCount(messageLimit)) the bridge reads of one event")
                continue
            }
            guard case .text(let text) = message else {
                Log.debug("events: ignoring a binary message from \(conn.url)")
                continue
            }
            do throws(EventDecodingError) {
                guard let event = try MopidyEvent.decode(text) else { continue }
                if case .other(let name) = event {
                    Log.debug("events: ignoring event \(name)")
                    continue
                }
                delivered += 1
                delegate.eventStreamReceived(event)
            } catch {
                Log.warning("events: \(conn.url): \(error); message ignored")
            }
        }
    }
}
