import Net

/// A reason the decoder side ended a connection, which wins over how the transfer ended.
struct ConnectionFailure: Equatable, Sendable {
    var reason: String
    /// Retrying soon will not help (not FLAC); otherwise (the sound server went away) the usual
    /// backoff applies.
    var permanent: Bool
}

/// How one connection ended, as far as the next one is concerned.
struct ConnectionOutcome: Equatable, Sendable {
    var end: StreamEnd
    var failure: ConnectionFailure? = nil
    /// Audio of this connection written to the sound server.
    var playedMs = 0
}

/// What to say and how long to wait after a connection ends. Pure: the outcome and the attempts
/// so far go in, the next status comes out; the random source is injected so tests are exact.
/// Not thread-safe: the network thread owns it.
struct ReconnectPolicy {
    /// Transient failures since the last connection that played long enough.
    private(set) var attempts = 0
    private let random: (ClosedRange<Int>) -> Int

    init(random: @escaping (ClosedRange<Int>) -> Int = { Int.random(in: $0) }) {
        self.random = random
    }

    /// The transient retry schedule: 0.5 s doubling to 30 s, each wait drawn between half and
    /// all of the step so that many clients do not retry in lockstep.
    static func backoffRange(attempt: Int) -> ClosedRange<Int> {
        let step = min(StreamTuning.backoffMaxMs, StreamTuning.backoffInitialMs << min(attempt, 20))
        return (step / 2)...max(step / 2, step)
    }

    /// `url` is the stream's address without credentials; `user` is named when a password is
    /// refused.
    mutating func next(after outcome: ConnectionOutcome, url: String, user: String?, slowRetryMs: Int) -> StreamStatus {
        if outcome.playedMs >= StreamTuning.playedBeforeResetMs { attempts = 0 }
        if let failure = outcome.failure {
            return failure.permanent ? .failed(reason: failure.reason, retryInMs: slowRetryMs)
                : .reconnecting(inMs: backoffMs(), reason: failure.reason)
        }
        switch outcome.end {
        case .httpStatus(let code) where code == 401 || code == 403:
            let who = user.map { " for user '\($0)'" } ?? ""
            return .failed(reason: "stream refused the password\(who) at \(url) (HTTP \(code))", retryInMs: slowRetryMs)
        case .httpStatus(404):
            return .failed(reason: "no stream at \(url) (HTTP 404)",
                           retryInMs: max(backoffMs(), StreamTuning.noStreamRetryMinMs))
        case .httpStatus(let code):
            return .reconnecting(inMs: backoffMs(), reason: "\(url) answered HTTP \(code)")
        case .stalled(let seconds):
            return .reconnecting(inMs: backoffMs(), reason: "no data from \(url) for \(seconds) s")
        case .failed(let message):
            return .reconnecting(inMs: backoffMs(), reason: "\(url): \(message)")
        case .untrusted(let message):
            return .failed(reason: "\(url): \(message) (a server with its own certificate authority: set ca_file)",
                           retryInMs: slowRetryMs)
        case .finished, .stoppedByConsumer:
            return .reconnecting(inMs: backoffMs(), reason: "\(url) ended the stream")
        }
    }

    private mutating func backoffMs() -> Int {
        defer { attempts += 1 }
        return random(Self.backoffRange(attempt: attempts))
    }
}
