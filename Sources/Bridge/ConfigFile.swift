import Support
@preconcurrency import Glibc

/// Changes to a configuration file made by `groove-bridge login`: the user's own lines, comments
/// and order stay as they are.
public enum ConfigFile {
    /// `text` with each `set` key's line replaced where it stands (a second line of the same key
    /// is dropped: the parser would take the last), or added at the end; and every line of a key
    /// in `commentOut` turned into a comment that says why, its value left out (it may be a
    /// password).
    public static func edited(_ text: String, set: [(key: String, value: String)], commentOut: Set<String>,
                              why: String) -> String {
        var lines = text.isEmpty ? [] : text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        var done = Set<String>()
        var out: [String] = []
        for line in lines {
            guard let key = key(of: line) else { out.append(line); continue }
            if commentOut.contains(key) {
                out.append("# \(key) = …  (\(why))")
            } else if let new = set.first(where: { $0.key == key }) {
                if !done.contains(key) { out.append("\(key) = \(new.value)") }
                done.insert(key)
            } else {
                out.append(line)
            }
        }
        for (key, value) in set where !done.contains(key) {
            out.append("\(key) = \(value)")
            done.insert(key)
        }
        return out.joined(separator: "\n") + "\n"
    }

    /// The key of a `key = value` line; nil for comments, blank lines and anything else.
    static func key(of line: String) -> String? {
        let t = line.trimmed
        guard !t.hasPrefix("#"), let eq = t.firstIndex(of: "=") else { return nil }
        let key = t[..<eq].trimmed
        return key.isEmpty ? nil : key
    }

    /// The file's text as it stands ("" when there is none); `ConfigLoader.load` vetted it.
    public static func text(at path: String) -> String {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return "" }
        defer { close(fd) }
        return ConfigLoader.read(fd, limit: 1 << 20) ?? ""
    }

    /// Writes `text` as the file at `path`, mode 0600, whole or not at all: a new file beside it,
    /// synced, then renamed over it. Its folder is made (0700) when missing.
    public static func write(_ text: String, to path: String) throws(ConfigError) {
        let dir = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "."
        if !dir.isEmpty && access(dir, F_OK) != 0 { try makeFolders(dir) }
        let tmp = "\(path).login-\(getpid())"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw ConfigError("\(tmp): \(String(cString: strerror(errno)))") }
        let bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            let n = bytes[written...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            written += n
        }
        let ok = written == bytes.count && fsync(fd) == 0
        let why = String(cString: strerror(errno))
        close(fd)
        guard ok, rename(tmp, path) == 0 else {
            unlink(tmp)
            throw ConfigError("cannot write \(path): \(ok ? String(cString: strerror(errno)) : why)")
        }
    }

    private static func makeFolders(_ dir: String) throws(ConfigError) {
        var built = dir.hasPrefix("/") ? "" : "."
        for part in dir.split(separator: "/") {
            built += "/" + part
            if mkdir(built, 0o700) != 0 && errno != EEXIST {
                throw ConfigError("cannot make \(built): \(String(cString: strerror(errno)))")
            }
        }
    }
}
