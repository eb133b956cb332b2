import Audio
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
    /// The sound output went away while playing (headset unplugged): pause here, or follow it.
    public var onOutputLost: OutputLostAction = .pause
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

    /// The keys of the file, in `ConfigKey.all`'s order.
    public static let keys = ConfigKey.all.map(\.name)

    /// The configuration file's default place.
    public static func defaultPath(environment: [String: String]) -> String {
        let base = environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? ((environment["HOME"] ?? "") + "/.config")
        return base + "/groove-bridge/config"
    }

    /// Applies one `key = value`; `origin` names where it came from for error messages.
    public mutating func set(_ key: String, _ raw: String, origin: String) throws(ConfigError) {
        guard let k = ConfigKey.named(key) else {
            throw ConfigError("\(origin): unknown key '\(key)' (known: \(Config.keys.joined(separator: ", ")))")
        }
        try k.apply(&self, raw.trimmed, origin)
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
            if ConfigKey.named(key)?.form == .secret && !passwordAllowed {
                throw ConfigError("\(path):\(lineNo): \(key): refusing a password from a file that group or others can read; run: chmod 600 \(path)")
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
    /// For logs and `status`: every key that has a value, a secret only as `set` or `none`.
    public var description: String {
        ConfigKey.all.compactMap { key in key.shown(self).map { "\(key.name)=\($0)" } }.joined(separator: " ")
    }
}
