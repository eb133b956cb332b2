import CCurl
import Glibc

/// A URL split into the parts this program uses: `scheme://[userinfo@]host[:port]path[?query]`,
/// as libcurl's URL API (`curl_url()`) reads it, the same parser that makes the connection: the
/// configuration's checks, log redaction, the WebSocket request and the Mopidy HTTP base cannot
/// read a URL otherwise than the connection does. The parts are libcurl's normal form: the scheme
/// in lower case, the path at least "/" with dot segments resolved, the port without leading
/// zeros, an IPv4 address in dotted form (`127.1` is `127.0.0.1`), the host's percent-escapes
/// decoded; nothing else is decoded. The fragment is dropped: it never leaves the client.
public struct URLParts: Equatable, Sendable {
    public var scheme: String
    /// `user[:password]` as written (percent-escapes kept). libcurl ends it at the first '@', so
    /// an '@' inside a password is written `%40`.
    public var userinfo: String?
    /// An IPv6 literal without its brackets, with its zone as written in a URL: `::1`,
    /// `fe80::1%25eth0`.
    public var host: String
    public var port: Int?
    /// "/path", or "/path?query".
    public var pathAndQuery: String

    public init(scheme: String, userinfo: String? = nil, host: String, port: Int? = nil, pathAndQuery: String = "/") {
        self.scheme = scheme
        self.userinfo = userinfo
        self.host = host
        self.port = port
        self.pathAndQuery = pathAndQuery
    }

    /// The parts of `text`, or nil when libcurl refuses it (no `scheme://`, no host, a port
    /// that is not a number up to 65535, an unclosed bracket, white space or control characters)
    /// or its scheme does not begin with a letter (RFC 3986 §3.1).
    public static func parse(_ text: String) -> URLParts? {
        guard !text.utf8.contains(0), let url = CurlURL(text),
              let scheme = url.part(CURLUPART_SCHEME), let first = scheme.unicodeScalars.first,
              ("a"..."z").contains(first), var host = url.part(CURLUPART_HOST), !host.isEmpty else { return nil }
        if host.hasPrefix("[") && host.hasSuffix("]") {
            host = String(host.dropFirst().dropLast())
            if let zone = url.part(CURLUPART_ZONEID) { host += "%25" + zone }
        }
        let user = url.part(CURLUPART_USER), password = url.part(CURLUPART_PASSWORD)
        let userinfo = user.map { $0 + (password.map { ":" + $0 } ?? "") } ?? password.map { ":" + $0 }
        let path = url.part(CURLUPART_PATH) ?? "/"
        return URLParts(scheme: scheme, userinfo: userinfo, host: host, port: url.part(CURLUPART_PORT).flatMap { Int($0) },
                        pathAndQuery: path + (url.part(CURLUPART_QUERY).map { "?" + $0 } ?? ""))
    }

    /// The host is this computer by name or address, so what is sent to it never crosses a
    /// network: `localhost` (and `*.localhost`, RFC 6761), 127.0.0.0/8, ::1, ::ffff:127.0.0.0/104.
    public var hostIsLoopback: Bool {
        let name = host.lowercased().hasSuffix(".") ? String(host.lowercased().dropLast()) : host.lowercased()
        if name == "localhost" || name.hasSuffix(".localhost") { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, name, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, name, &v6) == 1 else { return false }
        let b = withUnsafeBytes(of: &v6) { Array($0) }
        if b[0..<15].allSatisfy({ $0 == 0 }) && b[15] == 1 { return true }
        return b[0..<10].allSatisfy({ $0 == 0 }) && b[10] == 0xFF && b[11] == 0xFF && b[12] == 127
    }

    /// IPv6 literals need brackets in URLs: ::1 → [::1].
    public static func bracketed(_ host: String) -> String {
        host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
    }

    /// `host[:port]`, what an HTTP `Host` header carries.
    public var hostPort: String { URLParts.bracketed(host) + (port.map { ":\($0)" } ?? "") }

    /// `[userinfo@]host[:port]`.
    public var authority: String { (userinfo.map { $0 + "@" } ?? "") + hostPort }

    /// What an HTTP request line asks for: the path and query, "/" when there is no path.
    public var requestTarget: String { pathAndQuery.first == "/" ? pathAndQuery : "/" + pathAndQuery }

    /// The URL as text again (without the fragment).
    public var text: String { scheme + "://" + authority + pathAndQuery }
}

/// One libcurl URL handle (`CURLU`), freed in `deinit`. Not thread-safe; used by one caller.
private final class CurlURL {
    private let handle: OpaquePointer

    /// Nil when libcurl refuses the text as a URL. Schemes libcurl has no handler for (ws and
    /// wss in Debian 12's 7.88) are parsed like the others.
    init?(_ text: String) {
        CurlGlobal.ensure()
        guard let h = curl_url() else { return nil }
        handle = h
        guard curl_url_set(h, CURLUPART_URL, text, UInt32(CURLU_NON_SUPPORT_SCHEME)) == CURLUE_OK else { return nil }
    }

    deinit { curl_url_cleanup(handle) }

    /// One part as libcurl keeps it (not URL-decoded); nil when the URL has none.
    func part(_ which: CURLUPart) -> String? {
        var out: UnsafeMutablePointer<CChar>? = nil
        guard curl_url_get(handle, which, &out, 0) == CURLUE_OK, let out else { return nil }
        defer { curl_free(out) }
        return String(cString: out)
    }
}
