import Audio
import Mopidy
import Net
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
    /// The route from outside the home network (a reverse proxy or a VPN address), used when
    /// the home route does not answer.
    public var remoteHost: String? = nil
    public var remoteStreamURL: String? = nil
    public var remoteRPCURL: String? = nil
    public var remoteWSURL: String? = nil
    public var user = "listener"
    public var password: String? = nil
    public var passwordCommand: String? = nil
    /// Where `password` came from (set by `ConfigLoader.resolvePassword`); shown in `status`.
    public var passwordSource: PasswordSource = .none
    public var control: ControlMode = .local
    public var volume: VolumeMode = .server
    public var sink: String? = nil
    /// The sound output went away while playing (headset unplugged): pause here, or follow it.
    public var onOutputLost: OutputLostAction = .pause
    /// After a pause here, the stream's connection is kept this long, unheard, so that Play is
    /// heard at once (0: closed at once).
    public var keepWarmSeconds = StreamConfig.defaultKeepWarmSeconds
    public var notify = false
    /// Start the local stream when the bridge starts (default: wait for Play).
    public var autoplay = false
    /// Publish the server's track changes when they are heard here, not when the server switches.
    public var heardSync = true
    /// The server's own part of the stream delay (encoder, Ogg paging and Icecast, from Mopidy
    /// switching to the audio leaving Icecast on time), which a stream carries no timestamps to
    /// measure by: the value the bridge starts from and learns from the music
    /// (`heardSyncLearn`). The loopback rig's (gst flacenc + oggmux + Icecast) measures 0.23–0.32 s
    /// (BridgeTests' reference listener); the learning comes down from 400 within a few changes.
    public var serverDelayMs = 400
    /// Learn the server's delay from where track changes are heard in the music, starting from
    /// `serverDelayMs`; false keeps `serverDelayMs` fixed.
    public var heardSyncLearn = true
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

    /// Said once when the configuration is loaded, not at every connection: the stream's Basic
    /// auth sends the password in the clear over plain http, which matters once it leaves this
    /// computer. nil when there is no password, every stream is https, or its host is loopback.
    public var unencryptedPasswordWarning: String? {
        guard password != nil else { return nil }
        for (key, url) in [("stream_url", effectiveStreamURL), ("remote_stream_url", effectiveRemoteStreamURL)] {
            guard let url, let parts = URLParts.parse(url), parts.scheme == "http", !parts.hostIsLoopback else { continue }
            return "the password crosses the network unencrypted: use https (\(key) \(redactedURL(url)))"
        }
        return nil
    }

    /// Where the stream is: the configured URL, or Icecast's default on the host.
    public var effectiveStreamURL: String? {
        streamURL ?? host.map { "http://\(bracketed($0)):8000/stream.flac" }
    }

    /// Where Mopidy answers at home, in order of preference: the configured URLs, or from a host
    /// alone Groove Audio's layout then plain Mopidy's (each attempted on every connect; the log says which
    /// answered). With one URL given beside a host, that one wins in both.
    public var homeLayouts: [MopidyEndpoints]? {
        if let rpcURL, let wsURL { return [MopidyEndpoints(rpcURL: rpcURL, wsURL: wsURL)] }
        guard let host else { return nil }
        return MopidyEndpoints.layouts(host: host).map { MopidyEndpoints(rpcURL: rpcURL ?? $0.rpcURL, wsURL: wsURL ?? $0.wsURL) }
    }

    /// The stream from outside: the configured URL, or the server's front end on the remote host
    /// (a reverse proxy serves Groove Audio's layout on 443, the stream included).
    public var effectiveRemoteStreamURL: String? {
        remoteStreamURL ?? remoteHost.map { "https://\(bracketed($0))/stream.flac" }
    }

    /// Where Mopidy answers from outside; nil without a remote route.
    public var remoteLayouts: [MopidyEndpoints]? {
        let host = remoteHost.map(bracketed)
        guard let rpc = remoteRPCURL ?? host.map({ "https://\($0)/api/mopidy/rpc" }),
              let ws = remoteWSURL ?? host.map({ "wss://\($0)/ws/mopidy" }) else { return nil }
        return [MopidyEndpoints(rpcURL: rpc, wsURL: ws)]
    }

    /// The keys of one route go together: a remote route needs Mopidy's two URLs, and a stream
    /// when home has one (else leaving home would silence the music with no word why).
    public func checkRoutes() throws(ConfigError) {
        let remote = [remoteHost, remoteStreamURL, remoteRPCURL, remoteWSURL].contains { $0 != nil }
        guard remote else { return }
        guard remoteLayouts != nil else {
            throw ConfigError("remote_rpc_url and remote_ws_url go together (or set remote_host)")
        }
        if effectiveStreamURL != nil && effectiveRemoteStreamURL == nil {
            throw ConfigError("the remote route has no stream: set remote_stream_url (or remote_host)")
        }
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
    ///
    /// The file decides what the bridge runs (`password_command`) and where the password goes
    /// (`stream_url`), so it is read only when it is the user's own regular file that no one else
    /// can write: opened without following a symbolic link, and checked on the open descriptor
    /// (fstat), so what is checked is what is read.
    public static func load(path: String, required: Bool) throws(ConfigError) -> Config {
        // O_NONBLOCK: opening a FIFO put in its place must not wait for a writer.
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            switch errno {
            case ENOENT where !required: return Config()
            case ELOOP:
                throw ConfigError("refusing \(path): it is a symbolic link, and the configuration is read only "
                                  + "from a file itself; put the file there in place of the link")
            default: throw ConfigError("\(path): \(String(cString: strerror(errno)))")
            }
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw ConfigError("\(path): \(String(cString: strerror(errno)))") }
        try checkOwnership(st, path: path)
        guard let text = read(fd, limit: 1 << 20) else {
            throw ConfigError("\(path): cannot read it (\(String(cString: strerror(errno))))")
        }
        let groupOrOthersCanRead = st.st_mode & (S_IRGRP | S_IROTH) != 0
        return try Config.parse(text, path: path, passwordAllowed: !groupOrOthersCanRead)
    }

    /// A regular file of this user's that group and others cannot write, else why not and how
    /// to fix it.
    static func checkOwnership(_ st: stat, path: String) throws(ConfigError) {
        let why = "; whoever can change it decides what the bridge runs (password_command) and where the password goes"
        guard st.st_mode & S_IFMT == S_IFREG else {
            throw ConfigError("refusing \(path): it is not a regular file")
        }
        let me = geteuid()
        guard st.st_uid == me else {
            throw ConfigError("refusing \(path): it belongs to user \(st.st_uid), not to you (\(me))\(why); "
                              + "run: chown \(me) \(path)")
        }
        guard st.st_mode & (S_IWGRP | S_IWOTH) == 0 else {
            throw ConfigError("refusing \(path): group or others can write it\(why); run: chmod go-w \(path)")
        }
    }

    /// The password: GROOVE_PASSWORD, else `password_command`'s first line, else the file's,
    /// else the keyring's (`keyring` is the look-up; tests hand in their own).
    public static func resolvePassword(_ c: inout Config, environment: [String: String],
                                       keyring: (String) -> Keyring.Lookup = { Keyring.lookup(user: $0) }) throws(ConfigError) {
        if let env = environment["GROOVE_PASSWORD"], !env.isEmpty {
            c.password = env
            c.passwordSource = .environment
        } else if let cmd = c.passwordCommand {
            c.password = try runPasswordCommand(cmd)
            c.passwordSource = .command
        } else if c.password != nil {
            c.passwordSource = .file
        } else {
            passwordFromKeyring(&c, keyring(c.user))
        }
        if let p = c.password { Log.addSecret(p) }
    }

    /// How long `password_command` may take: a keyring waiting for a prompt nobody sees must not
    /// hold the start, or a reload, for longer.
    static let passwordCommandTimeoutMs = 10_000

    static func runPasswordCommand(_ cmd: String) throws(ConfigError) -> String {
        let result: CommandResult
        switch runCommand(["/bin/sh", "-c", cmd], timeoutMs: passwordCommandTimeoutMs, outputLimit: 65536) {
        case .failure(let e): throw ConfigError("password_command: \(e.message)")
        case .success(let r): result = r
        }
        // The command's output is the secret: never quote it in an error.
        switch result.end {
        case .exited(0): break
        case .exited(let code):
            throw ConfigError("password_command failed (exit status \(code)); check it by running it yourself")
        case .killedBy(let signal):
            throw ConfigError("password_command was killed by signal \(signal); check it by running it yourself")
        case .timedOut:
            throw ConfigError("password_command did not finish within \(passwordCommandTimeoutMs / 1000) s and was "
                              + "stopped (a locked keyring waiting for a prompt?); check it by running it yourself")
        }
        let first = String(decoding: result.output, as: UTF8.self)
            .split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""
        let pw = first.trimmed
        guard !pw.isEmpty else { throw ConfigError("password_command printed no password") }
        return pw
    }

    /// The text from `fd`, at most `limit` bytes; nil when reading fails.
    static func read(_ fd: Int32, limit: Int) -> String? {
        var out: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 8192)
        while out.count < limit {
            let n = Glibc.read(fd, &buf, buf.count)
            if n < 0 && errno == EINTR { continue }
            if n < 0 { return nil }
            if n == 0 { break }
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
