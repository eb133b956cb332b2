import Glibc
import Support

/// A URL split into the parts this program uses: `scheme://[userinfo@]host[:port][/path][?query]`
/// (RFC 3986 §3). The fragment is dropped: it never leaves the client. Nothing is
/// percent-decoded; every part keeps the text it was written with, except the scheme, which is
/// case-insensitive and kept in lower case.
///
/// The one URL parser here: the configuration's checks, log redaction, the WebSocket request and
/// the Mopidy HTTP base all read URLs through `parse`.
public struct URLParts: Equatable, Sendable {
    public var scheme: String
    /// What stands before the authority's last '@' (`user:password`); a password may itself hold
    /// '@' or ':'.
    public var userinfo: String?
    /// An IPv6 literal without its brackets: `::1`.
    public var host: String
    public var port: Int?
    /// As written: "" (none), "/path", "?query" or "/path?query".
    public var pathAndQuery: String

    public init(scheme: String, userinfo: String? = nil, host: String, port: Int? = nil, pathAndQuery: String = "") {
        self.scheme = scheme
        self.userinfo = userinfo
        self.host = host
        self.port = port
        self.pathAndQuery = pathAndQuery
    }

    /// The parts of `text`, or nil when it is not `scheme://host…` with a host, a port of digits
    /// up to 65535, closed brackets around an IPv6 literal, and no white space or control
    /// characters anywhere.
    public static func parse(_ text: String) -> URLParts? {
        guard !text.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F }),
              let schemeEnd = text.firstRange(ofText: "://") else { return nil }
        let scheme = text[..<schemeEnd.lowerBound]
        guard let first = scheme.unicodeScalars.first, first.isASCIILetter,
              scheme.unicodeScalars.allSatisfy({ $0.isASCIILetter || $0.isASCIIDigit || "+-.".unicodeScalars.contains($0) })
        else { return nil }

        let rest = text[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        var hostAndPort = rest[..<authorityEnd]
        var userinfo: String? = nil
        if let at = hostAndPort.lastIndex(of: "@") {
            userinfo = String(hostAndPort[..<at])
            hostAndPort = hostAndPort[hostAndPort.index(after: at)...]
        }

        let host: Substring
        let portText: Substring?
        if hostAndPort.first == "[" {
            guard let close = hostAndPort.firstIndex(of: "]") else { return nil }
            host = hostAndPort[hostAndPort.index(after: hostAndPort.startIndex)..<close]
            let after = hostAndPort[hostAndPort.index(after: close)...]
            guard host.contains(":"), after.isEmpty || after.first == ":" else { return nil }
            portText = after.isEmpty ? nil : after.dropFirst()
        } else if let colon = hostAndPort.firstIndex(of: ":") {
            host = hostAndPort[..<colon]
            portText = hostAndPort[hostAndPort.index(after: colon)...]
        } else {
            host = hostAndPort
            portText = nil
        }
        guard !host.isEmpty, !host.contains("["), !host.contains("]") else { return nil }

        var port: Int? = nil
        if let portText, !portText.isEmpty {  // "host:" is allowed and means the default port
            guard portText.count <= 5, portText.unicodeScalars.allSatisfy(\.isASCIIDigit),
                  let p = Int(portText), p <= 65535 else { return nil }
            port = p
        }

        var pathAndQuery = rest[authorityEnd...]
        if let hash = pathAndQuery.firstIndex(of: "#") { pathAndQuery = pathAndQuery[..<hash] }
        return URLParts(scheme: scheme.lowercased(), userinfo: userinfo, host: String(host), port: port,
                        pathAndQuery: String(pathAndQuery))
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

extension Unicode.Scalar {
    fileprivate var isASCIILetter: Bool { ("a"..."z").contains(self) || ("A"..."Z").contains(self) }
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
