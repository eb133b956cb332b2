import Net
import Support
@preconcurrency import Glibc

/// Cover art on disk, so shells that cannot load http(s) art (GNOME) get a `file://` URI.
/// Files are named by a hash of the image URI, written atomically, and the folder is kept under
/// `limitBytes` by removing the oldest files. Only http(s) and data: art is taken, always through
/// the cache: a `file://` URI from the server would have the shell open a path the server chose.
/// The folder is the user's own (made 0700, refused if it is a link or anyone else's) and every
/// file is created new (O_EXCL, O_NOFOLLOW), so nothing planted there is written through.
/// An empty `directory` means no cache, hence no art. Blocking: call from a worker thread.
public final class ArtCache: Sendable {
    public let directory: String
    public let limitBytes: Int
    public let maxImageBytes: Int
    private let http: HTTPClient

    public init(directory: String, limitBytes: Int = 100 << 20, maxImageBytes: Int = 20 << 20,
                timeouts: HTTPTimeouts = HTTPTimeouts(connectMs: 3000, totalMs: 15000))
    {
        self.directory = directory
        self.limitBytes = limitBytes
        self.maxImageBytes = maxImageBytes
        self.http = HTTPClient(timeouts: timeouts)
    }

    /// `$XDG_CACHE_HOME/groove-bridge/art`, else `$HOME/.cache/groove-bridge/art`; nil when
    /// neither is set to an absolute path. There is no shared fallback (/tmp): anyone could plant
    /// links or files there first.
    public static func defaultDirectory(environment: [String: String]) -> String? {
        func absolute(_ key: String) -> String? { environment[key].flatMap { $0.hasPrefix("/") ? $0 : nil } }
        guard let base = absolute("XDG_CACHE_HOME") ?? absolute("HOME").map({ $0 + "/.cache" }) else { return nil }
        return base + "/groove-bridge/art"
    }

    public enum ArtError: Error, CustomStringConvertible, Sendable {
        case download(String)
        case notAnImage(String)
        case disk(String)
        /// An image URI the bridge does not fetch (`file://`, other schemes).
        case refused(String)
        /// No cache folder (`directory` is empty): no art at all.
        case noCache
        public var description: String {
            switch self {
            case .download(let m), .notAnImage(let m), .disk(let m), .refused(let m): return m
            case .noCache: return "no cover art cache (neither XDG_CACHE_HOME nor HOME is set)"
            }
        }
    }

    /// The URL to fetch for an image URI: http(s) and data: as they are, Mopidy-Local's relative
    /// URIs (`/local/<hash>.jpg`) against the HTTP base; nil for any other scheme.
    public static func resolve(_ uri: String, base: String) -> String? {
        if let scheme = scheme(of: uri) { return ["http", "https", "data"].contains(scheme) ? uri : nil }
        return base + (uri.hasPrefix("/") ? "" : "/") + uri
    }

    /// The scheme of an absolute URI (RFC 3986 §3.1: a letter, then letters, digits, '+', '-'
    /// or '.', then ':'), lower-cased; nil for a relative one.
    static func scheme(of uri: String) -> String? {
        guard let colon = uri.firstIndex(of: ":") else { return nil }
        let s = uri[..<colon].unicodeScalars
        func letter(_ c: Unicode.Scalar) -> Bool { ("a"..."z").contains(c) || ("A"..."Z").contains(c) }
        guard let first = s.first, letter(first),
              s.allSatisfy({ letter($0) || ("0"..."9").contains($0) || "+-.".unicodeScalars.contains($0) }) else { return nil }
        return String(uri[..<colon]).lowercased()
    }

    /// The cached cover of the track `trackURI` as a file:// URI, or nil: it has none, it could
    /// not be fetched (said in the log), or there is no cache (no XDG_CACHE_HOME nor HOME).
    public func cover(of trackURI: String, from client: MopidyClient) -> String? {
        guard !directory.isEmpty else { return nil }
        do {
            guard let image = try client.images(for: trackURI).first else {
                Log.debug("cover art: none for \(trackURI)")
                return nil
            }
            return try localURI(for: image.uri, base: client.endpoints.httpBase)
        } catch {
            Log.warning("cover art for \(trackURI): \(error)")
            return nil
        }
    }

    /// The local file for an image URI, downloading it if needed. Returns a `file://` URI.
    public func localURI(for uri: String, base: String) throws(ArtError) -> String {
        guard !directory.isEmpty else { throw .noCache }
        guard let absolute = ArtCache.resolve(uri, base: base) else {
            throw .refused("cover art at \(redactedURL(uri).prefix(200)) is not used: only http(s) and data: art is fetched")
        }
        let name = sha1(Array(absolute.utf8)).map { String($0, radix: 16).leftPadded(2) }.joined()
        try makeDirectories(directory)
        // Already cached? (any extension)
        for ext in ["jpg", "png", "gif", "webp", "img"] {
            let path = "\(directory)/\(name).\(ext)"
            if access(path, R_OK) == 0 {
                utime(path, nil)  // recently used: evicted last
                return ArtCache.fileURI(path)
            }
        }
        let bytes: [UInt8]
        if absolute.hasPrefix("data:") {
            bytes = try ArtCache.decodeDataURI(absolute)
        } else {
            let r: HTTPResponse
            do throws(HTTPError) { r = try http.get(absolute, limit: maxImageBytes) } catch {
                throw .download("cover art at \(redactedURL(absolute)): \(error)")
            }
            guard r.status == 200 else { throw .download("cover art at \(redactedURL(absolute)): HTTP \(r.status)") }
            bytes = r.body
        }
        guard let ext = ArtCache.imageExtension(bytes) else {
            throw .notAnImage("cover art at \(redactedURL(absolute).prefix(200)) is not an image (\(bytes.count) bytes)")
        }
        let path = "\(directory)/\(name).\(ext)"
        try writeAtomically(bytes, to: path)
        evict()
        return ArtCache.fileURI(path)
    }

    static func fileURI(_ path: String) -> String {
        var out = "file://"
        for b in path.utf8 {
            let c = Character(Unicode.Scalar(b))
            if b < 0x80 && (c.isLetter || c.isNumber || "/-._~".contains(c)) { out.append(c) }
            else { out += "%" + String(b, radix: 16, uppercase: true).leftPadded(2) }
        }
        return out
    }

    /// JPEG, PNG, GIF or WebP by their magic bytes.
    static func imageExtension(_ b: [UInt8]) -> String? {
        if b.starts(with: [0xFF, 0xD8, 0xFF]) { return "jpg" }
        if b.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return "png" }
        if b.starts(with: Array("GIF8".utf8)) { return "gif" }
        if b.count > 12 && b.starts(with: Array("RIFF".utf8)) && Array(b[8..<12]) == Array("WEBP".utf8) { return "webp" }
        return nil
    }

    static func decodeDataURI(_ uri: String) throws(ArtError) -> [UInt8] {
        guard let comma = uri.firstIndex(of: ","), uri[..<comma].hasSuffix(";base64") else {
            throw .notAnImage("cover art data: URI is not base64")
        }
        guard let bytes = base64Decode(String(uri[uri.index(after: comma)...])) else {
            throw .notAnImage("cover art data: URI has invalid base64")
        }
        return bytes
    }

    /// Makes the folder (0700) and checks that the cache's own part is a real folder of this
    /// user's that no one else can write.
    private func makeDirectories(_ path: String) throws(ArtError) {
        var current = ""
        for part in path.split(separator: "/") {
            current += "/" + part
            if mkdir(current, 0o700) != 0 && errno != EEXIST {
                throw .disk("cannot create \(current): \(String(cString: strerror(errno)))")
            }
        }
        var st = stat()
        guard lstat(path, &st) == 0 else { throw .disk("\(path): \(String(cString: strerror(errno)))") }
        guard st.st_mode & S_IFMT == S_IFDIR, st.st_uid == geteuid(), st.st_mode & (S_IWGRP | S_IWOTH) == 0 else {
            throw .disk("not using \(path) for cover art: it is not a folder of yours that only you can write")
        }
    }

    private func writeAtomically(_ bytes: [UInt8], to path: String) throws(ArtError) {
        let tmp = path + ".tmp\(getpid())"
        // A new file, never one already there (or a link): a leftover of an earlier run with this
        // pid is removed once and the file made again.
        let flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC
        var fd = open(tmp, flags, 0o600)
        if fd < 0 && errno == EEXIST && unlink(tmp) == 0 { fd = open(tmp, flags, 0o600) }
        guard fd >= 0 else { throw .disk("cannot write \(tmp): \(String(cString: strerror(errno)))") }
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, bytes.count - offset) }
            if n <= 0 {
                close(fd); unlink(tmp)
                throw .disk("cannot write \(tmp): \(String(cString: strerror(errno)))")
            }
            offset += n
        }
        close(fd)
        guard rename(tmp, path) == 0 else {
            unlink(tmp)
            throw .disk("cannot rename \(tmp): \(String(cString: strerror(errno)))")
        }
    }

    /// Removes the least recently used files until the folder is under the limit.
    func evict() {
        guard let dir = opendir(directory) else { return }
        var files: [(path: String, size: Int, mtime: Int)] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasPrefix(".") { continue }
            let path = "\(directory)/\(name)"
            var st = stat()
            if stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG {
                files.append((path, Int(st.st_size), Int(st.st_mtim.tv_sec)))
            }
        }
        closedir(dir)
        var total = files.reduce(0) { $0.adding(saturating: $1.size) }
        for f in files.sorted(by: { $0.mtime < $1.mtime }) where total > limitBytes {
            if unlink(f.path) == 0 { total -= f.size }
        }
    }
}

extension String {
    func leftPadded(_ n: Int) -> String { count >= n ? self : String(repeating: "0", count: n - count) + self }
}

/// Standard base64 (with or without padding); nil on invalid input.
public func base64Decode(_ s: String) -> [UInt8]? {
    var map = [Int16](repeating: -1, count: 256)
    for (i, c) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8.enumerated() { map[Int(c)] = Int16(i) }
    var out: [UInt8] = []
    var acc: UInt32 = 0, bits = 0
    for c in s.utf8 {
        if c == UInt8(ascii: "=") { break }
        if c == 10 || c == 13 || c == 32 { continue }
        let v = map[Int(c)]
        if v < 0 { return nil }
        acc = acc << 6 | UInt32(v)
        bits += 6
        if bits >= 8 {
            bits -= 8
            out.append(UInt8(truncatingIfNeeded: acc >> UInt32(bits)))
        }
    }
    return out
}
