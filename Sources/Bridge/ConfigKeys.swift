import Audio
import Net
import Support
@preconcurrency import Glibc

/// One configuration key: its name in the file, how the command line takes it, what users are
/// told about it, and how a value is checked and stored.
///
/// `ConfigKey.all` is the one list of keys. The file parser (`Config.set`), `Config.keys`, the
/// option lines of `--help` and `Config.description` are made from it, and a unit test holds
/// doc/configuration.md's key table to it.
public struct ConfigKey: Sendable {
    /// How the command line takes a key.
    public enum Form: Sendable, Equatable {
        /// `--stream-url URL`
        case takesValue
        /// `--notify` alone means true; `--notify=false` or `--notify false` turns it off.
        case switchesOn
        /// Never on the command line (other users can read it there), shown only as `set` or
        /// `none`, and refused from a file that group or others can read.
        case secret
    }

    /// The name in the configuration file: `stream_url`.
    public let name: String
    public let form: Form
    /// What a value looks like, for `--help`: `URL`, `local|server`.
    public let placeholder: String
    /// The default as users are told it: `listener`, `none`, `from host`.
    public let defaultShown: String
    /// One line saying what the key does.
    public let help: String
    /// Checks a value and stores it; `origin` (`file:line` or `--flag`) starts every error.
    let apply: @Sendable (_ config: inout Config, _ value: String, _ origin: String) throws(ConfigError) -> Void
    /// The value as `Config.description` shows it; nil leaves the key out.
    let shown: @Sendable (Config) -> String?

    /// `--stream-url`
    public var flag: String { "--" + name.replacingText("_", with: "-") }

    /// The key on the command line: `--stream-url URL`, `--notify`; nil for a secret.
    public var commandLineUsage: String? {
        switch form {
        case .takesValue: return flag + " " + placeholder
        case .switchesOn: return flag + " [true|false]"
        case .secret: return nil
        }
    }

    /// `help` with the default where there is one to tell (a switch is off unless given).
    public var helpWithDefault: String {
        defaultShown == "none" || form == .switchesOn ? help : "\(help) (default: \(defaultShown))"
    }

    /// The key named `name` in the file, if there is one.
    public static func named(_ name: String) -> ConfigKey? { all.first { $0.name == name } }
}

extension ConfigKey {
    public static let all: [ConfigKey] = [
        ConfigKey("host", .host, \.host, default: "none",
                  help: "the Groove Audio server's host name or address"),
        ConfigKey("stream_url", .url, \.streamURL, default: "from host", help: "the FLAC stream",
                  shown: { $0.effectiveStreamURL }),
        ConfigKey("rpc_url", .url, \.rpcURL, default: "from host", help: "Mopidy JSON-RPC"),
        ConfigKey("ws_url", .url, \.wsURL, default: "from host", help: "Mopidy events WebSocket"),
        ConfigKey("remote_host", .host, \.remoteHost, default: "none",
                  help: "the server's address from outside (https/wss), used when home does not answer"),
        ConfigKey("remote_stream_url", .url, \.remoteStreamURL, default: "from remote_host",
                  help: "the FLAC stream from outside", shown: { $0.effectiveRemoteStreamURL }),
        ConfigKey("remote_rpc_url", .url, \.remoteRPCURL, default: "from remote_host", help: "Mopidy JSON-RPC from outside"),
        ConfigKey("remote_ws_url", .url, \.remoteWSURL, default: "from remote_host", help: "Mopidy events WebSocket from outside"),
        ConfigKey("user", .text("NAME"), \.user, default: "listener", help: "stream user for HTTP Basic auth"),
        ConfigKey("password", .text("PASSWORD"), \.password, form: .secret, default: "none",
                  help: "the stream password, only from a file that group and others cannot read"),
        ConfigKey("password_command", .text("CMD"), \.passwordCommand, default: "none",
                  help: "a command (run by sh) whose first line is the stream password",
                  // The command may hold the password itself (`echo …`).
                  shown: { $0.passwordCommand.map { _ in "set" } }),
        ConfigKey("control", .choice(), \.control, default: "local",
                  help: "Pause/Stop act on this computer only, or the house too"),
        ConfigKey("volume", .choice(), \.volume, default: "server",
                  help: "Volume sets Mopidy's mixer, or this computer's output"),
        ConfigKey("sink", .text("NAME"), \.sink, default: "PulseAudio's default", help: "the PulseAudio sink to play to"),
        ConfigKey("on_output_lost", .choice(), \.onOutputLost, default: "pause",
                  help: "when the output goes away while playing (headset unplugged): pause here, or follow it"),
        ConfigKey("keep_warm", .seconds(0...3600), \.keepWarmSeconds, default: String(StreamConfig.defaultKeepWarmSeconds),
                  help: "seconds the stream stays connected after a pause here, so that Play is heard at once (0: none)"),
        ConfigKey("notify", .bool, \.notify, form: .switchesOn, default: "false",
                  help: "a desktop notification per track change"),
        ConfigKey("autoplay", .bool, \.autoplay, form: .switchesOn, default: "false",
                  help: "start listening at once (else wait for Play)"),
        ConfigKey("heard_sync", .bool, \.heardSync, default: "true",
                  help: "show track changes when they are heard here"),
        ConfigKey("server_delay_ms", .milliseconds(0...30_000), \.serverDelayMs, default: "400",
                  help: "the server's own stream delay, encoder and Icecast (where learning starts)",
                  // It only counts when changes wait to be heard.
                  shown: { $0.heardSync ? String($0.serverDelayMs) : nil }),
        ConfigKey("heard_sync_learn", .bool, \.heardSyncLearn, default: "true",
                  help: "learn the server's delay from where track changes are heard in the music",
                  shown: { $0.heardSync ? String($0.heardSyncLearn) : nil }),
        ConfigKey("ca_file", .readableFile, \.caFile, default: "none",
                  help: "CA certificates (PEM) trusted for https/wss besides the system's"),
    ]
}

extension ConfigKey {
    /// A key whose property always has a value.
    init<Value>(_ name: String, _ rule: ValueRule<Value>, _ property: WritableKeyPath<Config, Value> & Sendable,
                form: Form = .takesValue, default defaultShown: String, help: String,
                shown: (@Sendable (Config) -> String?)? = nil)
    {
        self.init(name: name, form: form, placeholder: rule.placeholder, defaultShown: defaultShown, help: help,
                  apply: { (config, value, origin) throws(ConfigError) in
                      config[keyPath: property] = try rule.parse(value, name, origin)
                  },
                  shown: shown ?? { rule.show($0[keyPath: property]) })
    }

    /// A key whose property is nil until set (shown only when set, a secret as `set` or `none`).
    init<Value>(_ name: String, _ rule: ValueRule<Value>, _ property: WritableKeyPath<Config, Value?> & Sendable,
                form: Form = .takesValue, default defaultShown: String, help: String,
                shown: (@Sendable (Config) -> String?)? = nil)
    {
        let secret = form == .secret
        self.init(name: name, form: form, placeholder: rule.placeholder, defaultShown: defaultShown, help: help,
                  apply: { (config, value, origin) throws(ConfigError) in
                      config[keyPath: property] = try rule.parse(value, name, origin)
                  },
                  shown: shown ?? { config in
                      let value = config[keyPath: property]
                      if secret { return value == nil ? "none" : "set" }
                      return value.map(rule.show)
                  })
    }
}

/// How a key's value is checked and what it becomes. `parse` gets the value, the key's name and
/// where the value came from, and says all three in its errors.
struct ValueRule<Value>: Sendable {
    let placeholder: String
    let parse: @Sendable (_ value: String, _ key: String, _ origin: String) throws(ConfigError) -> Value
    let show: @Sendable (Value) -> String
}

extension ValueRule where Value == String {
    /// Any text but none.
    static func text(_ placeholder: String) -> ValueRule {
        ValueRule(placeholder: placeholder, parse: nonEmpty, show: { $0 })
    }

    private static func nonEmpty(_ value: String, _ key: String, _ origin: String) throws(ConfigError) -> String {
        guard !value.isEmpty else { throw ConfigError("\(origin): \(key) is empty") }
        return value
    }

    static let host = ValueRule(placeholder: "HOST", parse: { (value, key, origin) throws(ConfigError) in
        let host = try nonEmpty(value, key, origin)
        // Before the other checks: their messages quote the value, and this one must not.
        guard !host.contains("@") else { throw credentialsInURL(key, origin) }
        guard !host.contains("/"), !host.contains(" ") else {
            throw ConfigError("\(origin): \(key): '\(host)' is a host name or address, not a URL")
        }
        return host
    }, show: { $0 })

    static let url = ValueRule(placeholder: "URL", parse: { (value, key, origin) throws(ConfigError) in
        guard let parts = URLParts.parse(value), ["http", "https", "ws", "wss"].contains(parts.scheme) else {
            throw ConfigError("\(origin): \(key): '\(redactedURL(value))' is not an http(s):// or ws(s):// URL")
        }
        guard parts.userinfo == nil else { throw credentialsInURL(key, origin) }
        return value
    }, show: { $0 })

    /// Credentials written into a URL are printed wherever the URL is (logs, `status`, error
    /// messages, a browser's command line), and libcurl would send them on every request; the
    /// password has keys of its own that are never shown.
    private static func credentialsInURL(_ key: String, _ origin: String) -> ConfigError {
        ConfigError("\(origin): \(key): a user or password inside the URL is refused (it would show wherever "
                    + "the URL does); give the user as 'user' and the password as 'password' or 'password_command'")
    }

    /// A file this process can read when the configuration is loaded: a wrong path is said at
    /// start or reload, not when a connection first needs the file.
    static let readableFile = ValueRule(placeholder: "PATH", parse: { (value, key, origin) throws(ConfigError) in
        let path = try nonEmpty(value, key, origin)
        guard access(path, R_OK) == 0 else {
            throw ConfigError("\(origin): \(key): \(path): \(String(cString: strerror(errno)))")
        }
        return path
    }, show: { $0 })
}

extension ValueRule where Value == Bool {
    static let bool = ValueRule(placeholder: "true|false", parse: { (value, key, origin) throws(ConfigError) in
        switch value.lowercased() {
        case "true", "yes", "on", "1": return true
        case "false", "no", "off", "0": return false
        default: throw ConfigError("\(origin): \(key): '\(value)' is not true or false")
        }
    }, show: { String($0) })
}

extension ValueRule where Value == Int {
    static func milliseconds(_ range: ClosedRange<Int>) -> ValueRule { number(range, "MS", unit: "milliseconds") }
    static func seconds(_ range: ClosedRange<Int>) -> ValueRule { number(range, "SECONDS", unit: "seconds") }

    /// A whole number of `unit` within `range`.
    private static func number(_ range: ClosedRange<Int>, _ placeholder: String, unit: String) -> ValueRule {
        ValueRule(placeholder: placeholder, parse: { (value, key, origin) throws(ConfigError) in
            guard let n = Int(value), range.contains(n) else {
                throw ConfigError("\(origin): \(key): '\(value)' is not a number of \(unit) "
                                  + "from \(range.lowerBound) to \(range.upperBound)")
            }
            return n
        }, show: { String($0) })
    }
}

extension ValueRule where Value: RawRepresentable & CaseIterable & Sendable, Value.RawValue == String {
    /// One of the enum's raw values, listed in its order.
    static func choice() -> ValueRule {
        let names = Value.allCases.map(\.rawValue)
        return ValueRule(placeholder: names.joined(separator: "|"), parse: { (value, key, origin) throws(ConfigError) in
            guard let choice = Value(rawValue: value) else {
                throw ConfigError("\(origin): \(key): '\(value)' is not \(names.joined(separator: " or "))")
            }
            return choice
        }, show: { $0.rawValue })
    }
}
