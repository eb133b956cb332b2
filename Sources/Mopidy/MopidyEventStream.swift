import Net
import Support

/// What the event stream tells its owner. Called on the stream's own thread ("mopidy-events"):
/// the owner must hand the work on and return quickly.
public protocol MopidyEventStreamDelegate: AnyObject, Sendable {
    /// The socket to `url` (one of the stream's URLs, as given) is up; the owner should fetch the
    /// full state now (events missed while disconnected are lost, so nothing may stay stale).
    func eventStreamConnected(url: String)
    func eventStreamReceived(_ event: MopidyEvent)
    /// The socket went down; it will be retried in `retryInMs`. `reason.kind` is
    /// `.unauthorized` when the handshake was refused with HTTP 401 or 403.
    func eventStreamDisconnected(reason: FailureReason, retryInMs: Int)
}

/// Follows Mopidy's events over its WebSocket, reconnecting on `RetrySchedule.home` for as long
/// as it runs. One thread, "mopidy-events", blocked in poll(2) or on a condition while idle.
///
/// Given several URLs (the layouts a host may serve), each attempt tries them in order and takes
/// the first that completes the handshake; the owner learns which from `eventStreamConnected`.
/// So a server that is down when the bridge starts is found in whichever layout it comes back.
public final class MopidyEventStream: @unchecked Sendable {
    private let delegate: MopidyEventStreamDelegate
    private let messageLimit: Int
    private let connectTimeoutMs: Int
    private let monitor = Monitor()
    // Guarded by `monitor`:
    private var running = false
    private var connection: WebSocketConnection? = nil
    private var _urls: [String]
    /// No new attempt starts while held (no network).
    private var held = false
    /// Ends the wait between attempts and the outage (`retryNow`).
    private var retryRequested = false
    /// The connection is replaced at once (`reconnect`, `use(urls:)`): the owner hears of a
    /// disconnection only when the new one cannot be made.
    private var reconnectRequested = false

    public convenience init(url: String, delegate: MopidyEventStreamDelegate, messageLimit: Int = MopidyLimits.eventBytes,
                            connectTimeoutMs: Int = 5000)
    {
        self.init(urls: [url], delegate: delegate, messageLimit: messageLimit, connectTimeoutMs: connectTimeoutMs)
    }

    public init(urls: [String], delegate: MopidyEventStreamDelegate, messageLimit: Int = MopidyLimits.eventBytes,
                connectTimeoutMs: Int = 5000)
    {
        precondition(!urls.isEmpty, "MopidyEventStream needs a URL")
        self._urls = urls
        self.delegate = delegate
        self.messageLimit = messageLimit
        self.connectTimeoutMs = connectTimeoutMs
    }

    public var urls: [String] { monitor.withLock { _urls } }

    public func start() {
        let already = monitor.withLock { () -> Bool in
            defer { running = true }
            return running
        }
        guard !already else { return }
        startThread(name: "mopidy-events") { [self] in run() }
    }

    /// Stops the thread: wakes it from a wait or a blocked read.
    public func stop() { change(interrupting: true) { $0.running = false } }

    /// Ends a wait between attempts at once and starts the retry schedule afresh (the network
    /// came up). Nothing happens while connected.
    public func retryNow() { change(interrupting: false) { $0.retryRequested = true } }

    /// While held (no network), a failed connection is not attempted again until released; a
    /// connection that works goes on.
    public func hold(_ on: Bool) { change(interrupting: false) { $0.held = on } }

    /// Drops the connection and connects again at once, to `urls` when given (a route switch),
    /// else to the same ones (after a wake, the old socket may be dead without knowing it).
    public func reconnect(urls new: [String]? = nil) {
        change(interrupting: true) { s in
            if let new, !new.isEmpty { s._urls = new }
            s.reconnectRequested = true
        }
    }

    /// Changes the state under the lock, then wakes the thread wherever it waits: in a wait
    /// between attempts, or (`interrupting`) in a blocked read.
    private func change(interrupting: Bool, _ body: (MopidyEventStream) -> Void) {
        let conn = monitor.withLock { () -> WebSocketConnection? in
            body(self)
            return interrupting ? connection : nil
        }
        conn?.interrupt()
        monitor.broadcast()
    }

    private var isRunning: Bool { monitor.withLock { running } }

    private func run() {
        var outage = OutageClock()
        var lastSaid: String? = nil
        while isRunning {
            let urls = monitor.withLock { () -> [String] in
                reconnectRequested = false
                return _urls
            }
            let (connection, failure) = connectFirst(urls)
            var reason = failure.reason
            var retry = failure.retry
            var replaced = false
            if let (conn, url) = connection {
                // A reconnection asked for while connecting: this socket goes to the old URLs.
                let keep = monitor.withLock { () -> Bool in
                    guard running && !reconnectRequested else { return false }
                    self.connection = conn
                    // A retry asked for while connecting is answered by this connection.
                    retryRequested = false
                    return true
                }
                if keep {
                    Log.info("events: connected to \(conn.url)")
                    let since = monotonicMs()
                    delegate.eventStreamConnected(url: url)
                    let (why, delivered) = readLoop(conn)
                    (reason, retry) = (FailureReason(why), .transient)
                    // Only a connection that proved healthy ends the outage: a server that
                    // accepts and then breaks every socket is not retried quickly for ever.
                    if delivered > 0 || monotonicMs() - since >= 10_000 {
                        outage.reset()
                        lastSaid = nil
                    }
                    monitor.withLock { self.connection = nil }
                }
                conn.closeGracefully(timeoutMs: 200)
                replaced = monitor.withLock { reconnectRequested }
            }
            guard isRunning else { break }
            if replaced { continue }
            let delay = RetrySchedule.home.delayMs(after: retry, sinceFirstFailureMs: outage.failed(atMs: monotonicMs()))
            // Said when an outage starts and when its reason or pace changes: a line for every
            // quick retry would fill the journal.
            let said = "\(reason.message); retrying in \(Double(delay) / 1000) s"
            Log.write(said == lastSaid ? .debug : .warning, "events: \(said)")
            lastSaid = said
            delegate.eventStreamDisconnected(reason: reason, retryInMs: delay)
            let deadline = monotonicMs().adding(saturating: delay)
            let retried = monitor.withLock { () -> Bool in
                while running && !retryRequested && !reconnectRequested && (held || monotonicMs() < deadline) {
                    monitor.wait(deadlineMs: held ? nil : deadline)
                }
                defer { retryRequested = false }
                return retryRequested || reconnectRequested
            }
            if retried { outage.reset() }
        }
    }

    /// A connection to the first URL that completes the handshake, or why none did (every URL's
    /// error, so a log line shows each layout that was tried) and whether waiting can fix it. A
    /// refused login at any of them is the reason's kind: the other layouts are then the wrong
    /// ones, and the password is what to fix.
    private func connectFirst(_ urls: [String]) -> ((WebSocketConnection, String)?, (reason: FailureReason, retry: FailureKind)) {
        var failures: [String] = []
        var kind = FailureReason.Kind.other
        var retry = FailureKind.permanent
        for url in urls where isRunning {
            do throws(WebSocketError) {
                return ((try WebSocketConnection(url: url, timeoutMs: connectTimeoutMs, messageLimit: messageLimit,
                                                 skipLimit: MopidyLimits.skippedEventBytes), url), (FailureReason(""), .transient))
            } catch {
                failures.append(error.description)
                if error.reason.isUnauthorized, kind == .other { kind = error.reason.kind }
                if error.failureKind == .transient { retry = .transient }
            }
        }
        guard !failures.isEmpty else { return (nil, (FailureReason("stopped"), .transient)) }
        return (nil, (FailureReason(kind, failures.joined(separator: "; ")), retry))
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

extension WebSocketError {
    /// A certificate that does not verify or a refused login will not get better by waiting; a
    /// server that is down, restarting or out of reach will.
    var failureKind: FailureKind {
        switch self {
        case .connect(let e) where e.isCertificateProblem: return .permanent
        case .rejected where reason.isUnauthorized: return .permanent
        case .badURL: return .permanent
        default: return .transient
        }
    }
}
