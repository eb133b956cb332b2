/// How a connection failed, as far as retrying it goes.
public enum FailureKind: Sendable, Equatable {
    /// Refused, reset, timed out, the mount missing while the server's source reconnects, 5xx:
    /// the server is restarting or out of reach, and will most likely be back soon.
    case transient
    /// A refused password (401/403), a page that is not FLAC, a certificate that does not
    /// verify: waiting alone will not fix it, though a fixed server is picked up by itself.
    case permanent
}

/// When to try a connection again, made for a home server: one pure function of how it failed
/// and how long it has been failing, shared by the stream and the events socket.
///
/// A home server that restarts is back within seconds to minutes, and it has a handful of
/// listeners: retrying twice a second costs it nothing, and the music is back within a second of
/// the server. Past two minutes the outage is a long one (the server is off, the laptop is
/// elsewhere): every 5 s, then past ten minutes every 30 s, so a server that is off for the night
/// costs one request a minute per socket. There is no jitter: with a handful of clients,
/// retrying in step costs nothing, and a random wait would only delay the music.
public struct RetrySchedule: Sendable, Equatable {
    /// The first retry after a transient failure: a blip (a proxy restarting) is over at once.
    public var firstMs = 250
    /// Every retry after that for the first `fastForMs`: the music back within about half of
    /// this after the server (plus Icecast's own ~0.8 s to the first byte) vs. connection attempts
    /// to a server that is down.
    public var fastMs = 500
    public var fastForMs = 120_000
    /// Then this often, up to `mediumForMs` after the first failure.
    public var mediumMs = 5000
    public var mediumForMs = 600_000
    /// Then this often, for as long as it fails.
    public var slowMs = 30_000
    /// What waiting will not fix is retried this often from the start: a fixed password or
    /// server is picked up by itself vs. requests and log lines in vain.
    public var permanentMs = 30_000

    /// The schedule the bridge uses.
    public static let home = RetrySchedule()

    public init() {}

    /// The wait before the next attempt, after a failure of `kind` when the first failure of
    /// this outage came `sinceFirstFailureMs` ago (0 for the first; a negative value, a clock that
    /// goes back, counts as 0).
    public func delayMs(after kind: FailureKind, sinceFirstFailureMs since: Int) -> Int {
        if kind == .permanent { return permanentMs }
        switch max(0, since) {
        case 0: return firstMs
        case ..<fastForMs: return fastMs
        case ..<mediumForMs: return mediumMs
        default: return slowMs
        }
    }

    /// How many attempts the schedule makes in the first `windowMs` of a transient outage,
    /// counting the first connection that failed: the bound a test holds the code to.
    public func attempts(inFirstMs windowMs: Int) -> Int {
        var at = 0
        var n = 1
        while true {
            let delay = delayMs(after: .transient, sinceFirstFailureMs: at)
            guard delay > 0 else { return .max }  // a schedule without waits has no bound
            at = at.adding(saturating: delay)
            guard at <= windowMs else { return n }
            n += 1
        }
    }
}

/// The clock of one outage: when its first failure came, so that `RetrySchedule` knows how long
/// it has been failing. Not thread-safe: the thread that connects owns it.
public struct OutageClock: Sendable {
    public private(set) var firstFailureMs: Int? = nil

    public init() {}

    /// A failure at `nowMs`: how long the outage has lasted so far (0 for its first failure).
    public mutating func failed(atMs nowMs: Int) -> Int {
        guard let first = firstFailureMs else {
            firstFailureMs = nowMs
            return 0
        }
        return nowMs.subtracting(saturating: first)
    }

    /// The connection proved healthy, or something changed that makes quick retries worth it
    /// again (the network came up, the machine woke, the server's other socket is back).
    public mutating func reset() { firstFailureMs = nil }
}
