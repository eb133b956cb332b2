@preconcurrency import Glibc
import Synchronization

/// Log lines on stderr (journald takes them from there under systemd). Every line passes through
/// the secret scrubber, so a password that reached a message by mistake (say, inside a URL in a
/// library's error text) is printed as `***`, and so are the credentials of any URL written
/// `scheme://user:password@host` — the code must not rely on it, but it is the net.
public enum Log {
    public enum Level: Int, Comparable, Sendable {
        case error = 0, warning, info, debug
        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
        var tag: String {
            switch self {
            case .error: return "error"
            case .warning: return "warning"
            case .info: return "info"
            case .debug: return "debug"
            }
        }
    }

    private struct Config {
        var level: Level = .info
        var secrets: [String] = []
        var sink: (@Sendable (String) -> Void)? = nil
    }

    private static let config = Mutex(Config())

    public static func setLevel(_ level: Level) { config.withLock { $0.level = level } }
    public static var level: Level { config.withLock { $0.level } }

    /// Registers a secret that must never be printed, however short: a short password is the
    /// easiest to guess from a log, and every place it stands in a line is replaced.
    public static func addSecret(_ secret: String) {
        guard !secret.isEmpty else { return }
        config.withLock { c in
            guard !c.secrets.contains(secret) else { return }
            c.secrets.append(secret)
            // The longest first, in bytes as the scrubber matches: a secret inside another must
            // not leave the rest of that one.
            c.secrets.sort { $0.utf8.count > $1.utf8.count }
        }
    }

    /// Sends lines to `sink` as well as stderr (tests use it).
    public static func setSink(_ sink: (@Sendable (String) -> Void)?) { config.withLock { $0.sink = sink } }

    public static func scrub(_ text: String) -> String {
        let secrets = config.withLock { $0.secrets }
        var out = redactingURLCredentials(text)
        for s in secrets where out.containsText(s) { out = out.replacingText(s, with: "***") }
        return out
    }

    /// `text` with the user info of every `scheme://user:password@host` in it replaced by `***`.
    /// An authority ends at '/', '?', '#', white space or a quote; its credentials are what
    /// stands before its last '@'.
    static func redactingURLCredentials(_ text: String) -> String {
        guard text.contains("@"), text.containsText("://") else { return text }
        let ends: Set<Character> = ["/", "?", "#", " ", "\t", "\n", "\r", "\"", "'", "<", ">", "`"]
        var out = ""
        var rest = text[...]
        while let sep = rest.firstRange(ofText: "://") {
            out += rest[..<sep.upperBound]
            rest = rest[sep.upperBound...]
            let end = rest.firstIndex(where: ends.contains) ?? rest.endIndex
            if let at = rest[..<end].lastIndex(of: "@") {
                out += "***"
                rest = rest[at...]
            }
        }
        return out + rest
    }

    public static func write(_ level: Level, _ message: @autoclosure () -> String) { emit(level, message) }
    public static func error(_ message: @autoclosure () -> String) { emit(.error, message) }
    public static func warning(_ message: @autoclosure () -> String) { emit(.warning, message) }
    public static func info(_ message: @autoclosure () -> String) { emit(.info, message) }
    public static func debug(_ message: @autoclosure () -> String) { emit(.debug, message) }

    private static func emit(_ level: Level, _ message: () -> String) {
        let (enabled, sink) = config.withLock { ($0.level >= level, $0.sink) }
        guard enabled else { return }
        // One line per message, whatever a server put in a title.
        let line = "groove-bridge: [\(level.tag)] " + terminalSafe(scrub(message())) + "\n"
        fputs(line, stderr)
        sink?(line)
    }
}
