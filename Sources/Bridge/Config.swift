import Mopidy
import Support
@preconcurrency import Glibc

/// What Play/Pause act on: this computer's listening (default), or the house too.
public enum ControlMode: String, Sendable, CaseIterable { case local, server }
/// What Volume changes: Mopidy's mixer (default), or only this computer's output.
public enum VolumeMode: String, Sendable, CaseIterable { case server, local }

public struct ConfigError: Error, CustomStringConvertible, Equatable, Sendable {
    public let message: String
    public var description: String { message }
    init(_ message: String) { self.message = message }
}

/// The bridge's configuration: `$XDG_CONFIG_HOME/groove-bridge/config` (flat `key = value`
/// lines, `#` comments), then command-line flags of the same names, then the environment for the
/// password. The password itself is redacted from `description`.
public struct Config: Sendable, Equatable {
    public var host: String? = nil
    public var streamURL: String? = nil
    public var rpcURL: String? = nil
    public var wsURL: String? = nil
    public var user = "listener"
    public var password: String? = nil
    public var passwordCommand: String? = nil
    public var control: ControlMode = .local
    public var volume: VolumeMode = .server
    public var sink: String? = nil
    public var notify = false
    /// Start the local stream when the bridge starts (default: wait for Play).
    public var autoplay = false
    /// Publish the server's track changes when they are heard here, not when the server switches.
    public var heardSync = true
    /// The server's own part of the stream delay (encoder, Ogg paging and Icecast, from Mopidy
    /// switching to the audio leaving Icecast on time), which a stream carries no timestamps to
    /// measure by. Measured on the loopback rig (gst flacenc + oggmux + Icecast): ~400 ms; set
    /// yours if titles change early (raise it) or late (lower it).
    public var serverDelayMs = 400
    /// Certificate authorities (PEM) to trust for https/wss besides the system's: a home server
    /// with its own CA. Verification is always on.
    public var caFile: String? = nil

    public init() {}

    public static let keys = ["host", "stream_url", "rpc_url", "ws_url", "user", "password", "password_command",
                              "control", "volume", "sink", "notify", "autoplay", "heard_sync", "server_delay_ms", "ca_file"]

    /// The configuration file's default place.
    public static func defaultPath(environment: [String: String]) -> String {
        let base = environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? ((environment["HOME"] ?? "") + "/.config")
        return base + "/groove-bridge/config"
    }

    /// Applies one `key = value`; `origin` names where it came from for error messages.
    public mutating func set(_ key: String, _ raw: String, origin: String) throws(ConfigError) {
        let value = raw.trimmed
        func url(_ v: String) throws(ConfigError) -> String {
            let lower = v.lowercased()
            let ok = ["http://", "https://", "ws://", "wss://"].contains { lower.hasPrefix($0) } && v.count > 8
            guard ok, !v.contains(" ") else { throw ConfigError("\(origin): \(key): '\(v)' is not an http(s):// or ws(s):// URL") }
            return v
        }
        func bool(_ v: String) throws(ConfigError) -> Bool {
            switch v.lowercased() {
            case "true", "yes", "on", "1": return true
            case "false", "no", "off", "0": return false
            default: throw ConfigError("\(origin): \(key): '\(v)' is not true or false")
            }
        }
        func nonEmpty(_ v: String) throws(ConfigError) -> String {
            guard !v.isEmpty else { throw ConfigError("\(origin): \(key) is empty") }
            return v
        }
        switch key {
        case "host":
            let h = try nonEmpty(value)
            guard !h.contains("/"), !h.contains(" ") else { throw ConfigError("\(origin): host: '\(h)' is a host name or address, not a URL") }
            host = h
        case "stream_url": streamURL = try url(value)
        case "rpc_url": rpcURL = try url(value)
        case "ws_url": wsURL = try url(value)
        case "user": user = try nonEmpty(value)
        case "password": password = try nonEmpty(value)
        case "password_command": passwordCommand = try nonEmpty(value)
        case "control":
            guard let c = ControlMode(rawValue: value) else { throw ConfigError("\(origin): control: '\(value)' is not local or server") }
            control = c
        case "volume":
            guard let v = VolumeMode(rawValue: value) else { throw ConfigError("\(origin): volume: '\(value)' is not server or local") }
            volume = v
        case "sink": sink = try nonEmpty(value)
        case "notify": notify = try bool(value)
        case "autoplay": autoplay = try bool(value)
        case "heard_sync": heardSync = try bool(value)
        case "server_delay_ms":
            guard let ms = Int(value), (0...30_000).contains(ms) else {
                throw ConfigError("\(origin): server_delay_ms: '\(value)' is not a number of milliseconds from 0 to 30000")
            }
            serverDelayMs = ms
        case "ca_file":
            let path = try nonEmpty(value)
            guard access(path, R_OK) == 0 else {
                throw ConfigError("\(origin): ca_file: \(path): \(String(cString: strerror(errno)))")
            }
            caFile = path
        default:
            throw ConfigError("\(origin): unknown key '\(key)' (known: \(Config.keys.joined(separator: ", ")))")
        }
    }

    /// Parses a configuration file's text. `passwordAllowed` is false when the file can be read
    /// by group or others: a password there is refused rather than used.
    public static func parse(_ text: String, path: String, passwordAllowed: Bool) throws(ConfigError) -> Config {
        var c = Config()
        var lineNo = 0
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            lineNo += 1
            let line = rawLine.trimmed
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let eq = line.firstIndex(of: "=") else {
                throw ConfigError("\(path):\(lineNo): expected 'key = value'")
            }
            let key = line[..<eq].trimmed
            let value = line[line.index(after: eq)...].trimmed
            if line.hasPrefix("[") { throw ConfigError("\(path):\(lineNo): sections are not used; write key = value lines") }
            if key == "password" && !passwordAllowed {
                throw ConfigError("\(path):\(lineNo): password: refusing a password from a file that group or others can read; run: chmod 600 \(path)")
            }
            try c.set(key, value, origin: "\(path):\(lineNo)")
        }
        return c
    }

    /// Where the stream is: the configured URL, or Icecast's default on the host.
    public var effectiveStreamURL: String? {
        streamURL ?? host.map { "http://\(bracketed($0)):8000/stream.flac" }
    }
}

extension StringProtocol {
    var trimmed: String {
        let s = drop(while: { $0 == " " || $0 == "\t" || $0 == "\r" })
        return String(s.reversed().drop(while: { $0 == " " || $0 == "\t" || $0 == "\r" }).reversed())
    }
}

/// Reads the file, the flags and the environment, and resolves the password.
public enum ConfigLoader {
    /// Loads `path` (a missing file is an empty configuration unless `required`).
    public static func load(path: String, required: Bool) throws(ConfigError) -> Config {
        var st = stat()
        guard stat(path, &st) == 0 else {
            if required || errno != ENOENT {
                throw ConfigError("\(path): \(String(cString: strerror(errno)))")
            }
            return Config()
        }
        guard let text = readFile(path, limit: 1 << 20) else {
            throw ConfigError("\(path): cannot read it (\(String(cString: strerror(errno))))")
        }
        let groupOrOthersCanRead = st.st_mode & (S_IRGRP | S_IROTH) != 0
        return try Config.parse(text, path: path, passwordAllowed: !groupOrOthersCanRead)
    }

    /// The password: GROOVE_PASSWORD, else `password_command`'s first line, else the file's.
    public static func resolvePassword(_ c: inout Config, environment: [String: String]) throws(ConfigError) {
        if let env = environment["GROOVE_PASSWORD"], !env.isEmpty {
            c.password = env
        } else if let cmd = c.passwordCommand {
            c.password = try runPasswordCommand(cmd)
        }
        if let p = c.password { Log.addSecret(p) }
    }

    static func runPasswordCommand(_ cmd: String) throws(ConfigError) -> String {
        guard let pipe = popen(cmd, "r") else {
            throw ConfigError("password_command: cannot run it (\(String(cString: strerror(errno))))")
        }
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 4096)
        while out.count < 65536 {
            let n = fread(&buf, 1, buf.count, pipe)
            if n <= 0 { break }
            out += buf[0..<n]
        }
        let status = pclose(pipe)
        // The command's output is the secret: never quote it in an error.
        guard status == 0 else {
            throw ConfigError("password_command failed (exit status \(status >> 8)); check it by running it yourself")
        }
        let first = String(decoding: out, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""
        let pw = first.trimmed
        guard !pw.isEmpty else { throw ConfigError("password_command printed no password") }
        return pw
    }

    static func readFile(_ path: String, limit: Int) -> String? {
        guard let f = fopen(path, "r") else { return nil }
        defer { fclose(f) }
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 8192)
        while out.count < limit {
            let n = fread(&buf, 1, buf.count, f)
            if n <= 0 { break }
            out += buf[0..<n]
        }
        return String(decoding: out, as: UTF8.self)
    }
}

extension Config: CustomStringConvertible {
    /// For logs and `status`: everything but the password.
    public var description: String {
        var parts: [String] = []
        if let host { parts.append("host=\(host)") }
        if let s = effectiveStreamURL { parts.append("stream_url=\(s)") }
        if let r = rpcURL { parts.append("rpc_url=\(r)") }
        if let w = wsURL { parts.append("ws_url=\(w)") }
        parts.append("user=\(user)")
        parts.append("password=\(password == nil ? "none" : "set")")
        parts.append("control=\(control.rawValue)")
        parts.append("volume=\(volume.rawValue)")
        if let sink { parts.append("sink=\(sink)") }
        parts.append("notify=\(notify)")
        parts.append("heard_sync=\(heardSync)")
        if heardSync { parts.append("server_delay_ms=\(serverDelayMs)") }
        if let caFile { parts.append("ca_file=\(caFile)") }
        return parts.joined(separator: " ")
    }
}
