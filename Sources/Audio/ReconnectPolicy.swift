import Net
import Support

/// What to say and how long to wait after a connection ends. Pure: the outcome, the time and
/// the outage so far go in, the next status comes out (`RetrySchedule.home` decides the wait).
/// Not thread-safe: the network thread owns it.
struct ReconnectPolicy {
    /// A reason the decoder side ended a connection, which wins over how the transfer ended.
    struct Failure: Equatable, Sendable {
        var reason: String
        /// Retrying soon will not help (not FLAC); otherwise (the sound server went away) the
        /// transient schedule applies.
        var permanent: Bool
    }

    /// How one connection ended, as far as the next one is concerned.
    struct Outcome: Equatable, Sendable {
        var end: StreamEnd
        var failure: Failure? = nil
        /// Audio of this connection written to the sound server.
        var playedMs = 0
    }

    var schedule = RetrySchedule.home
    /// When the transient failures since the last connection that played long enough began.
    private(set) var outage = OutageClock()
    /// Transient failures in this outage, this one included.
    private(set) var failuresInOutage = 0

    /// Quick retries are worth it again (the network came up, the machine woke, Mopidy's events
    /// are back): the next transient failure starts a new outage.
    mutating func restartOutage() {
        outage.reset()
        failuresInOutage = 0
    }

    /// `url` is the stream's address without credentials; `user` is named when a password is
    /// refused. `slowRetryMs` is the wait after what waiting will not fix.
    mutating func next(after outcome: ReconnectPolicy.Outcome, url: String, user: String?, slowRetryMs: Int,
                       nowMs: Int) -> StreamStatus {
        if outcome.playedMs >= StreamTuning.playedBeforeResetMs { restartOutage() }
        func transient(_ reason: String) -> StreamStatus {
            let since = outage.failed(atMs: nowMs)
            failuresInOutage = failuresInOutage.adding(saturating: 1)
            return .reconnecting(inMs: schedule.delayMs(after: .transient, sinceFirstFailureMs: since), reason: reason)
        }
        if let failure = outcome.failure {
            return failure.permanent ? .failed(reason: FailureReason(failure.reason), retryInMs: slowRetryMs)
                : transient(failure.reason)
        }
        switch outcome.end {
        case .httpStatus(let code) where code == 401 || code == 403:
            let who = user.map { " for user '\($0)'" } ?? ""
            return .failed(reason: FailureReason(.unauthorized(httpStatus: code),
                                                 "stream refused the password\(who) at \(url) (HTTP \(code))"),
                           retryInMs: slowRetryMs)
        case .httpStatus(404):
            // Icecast answers 404 for a mount whose source has not reconnected yet: the server
            // is on its way back, so it is retried like any other transient failure.
            return transient("no stream at \(url) (HTTP 404)")
        case .httpStatus(let code):
            return transient("\(url) answered HTTP \(code)")
        case .stalled(let seconds):
            return transient("no data from \(url) for \(seconds) s")
        case .failed(let message):
            return transient("\(url): \(message)")
        case .untrusted(let message):
            return .failed(reason: FailureReason("\(url): \(message) (a server with its own certificate authority: set ca_file)"),
                           retryInMs: slowRetryMs)
        case .finished, .stoppedByConsumer:
            return transient("\(url) ended the stream")
        }
    }
}
