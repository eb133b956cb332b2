import CCurl
import Glibc
import Support

public enum WebSocketError: Error, CustomStringConvertible, Sendable {
    case badURL(String)
    case connect(CurlError)
    case handshake(url: String, reason: String)
    /// The server answered the upgrade with another HTTP status (`statusLine` as sent).
    case rejected(url: String, httpStatus: Int, statusLine: String)
    case protocolViolation(url: String, WebSocketProtocolError)
    case closed(url: String, code: UInt16, reason: String)
    case io(url: String, reason: String)
    case timedOut(url: String, what: String)
    case interrupted

    public var description: String {
        switch self {
        case .badURL(let u): return "not a ws:// or wss:// URL: \(u)"
        case .connect(let e): return "cannot connect: \(e)"
        case .handshake(let url, let r): return "\(url): WebSocket handshake failed: \(r)"
        case .rejected(let url, _, let line): return "\(url): WebSocket handshake failed: server answered \(line)"
        case .protocolViolation(let url, let e): return "\(url): WebSocket protocol error: \(e)"
        case .closed(let url, let code, let r): return "\(url): closed by server (\(code)\(r.isEmpty ? "" : ", \(r)"))"
        case .io(let url, let r): return "\(url): \(r)"
        case .timedOut(let url, let what): return "\(url): timed out \(what)"
        case .interrupted: return "interrupted"
        }
    }

    /// The kind a decision reads: a refused login is told by the status the server answered.
    public var reason: FailureReason {
        if case .rejected(_, let status, _) = self { return FailureReason(.init(httpStatus: status), description) }
        return FailureReason(description)
    }

    /// The status of an HTTP status line ("HTTP/1.1 401 Unauthorized" → 401); nil if it has none.
    static func status(ofLine line: Substring) -> Int? {
        let parts = line.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[1].utf8.count == 3, parts[1].utf8.allSatisfy({ (48...57).contains($0) }) else {
            return nil
        }
        return Int(parts[1])
    }
}

/// An RFC 6455 client on a connection that libcurl opens (`CURLOPT_CONNECT_ONLY`): libcurl keeps
/// TLS, proxies and IPv6; this type does the upgrade and the framing. Debian 12's libcurl 7.88
/// has no WebSocket support of its own.
///
/// Thread use: one thread (the owner's reader thread) calls `receive`/`send`/`close`; any thread
/// may call `interrupt()` to wake a blocked `receive`. Waiting blocks in poll(2) with no timeout
/// at all, so an idle connection costs no wakeups.
public final class WebSocketConnection: @unchecked Sendable {
    public let url: String
    private let easy: CurlEasy
    private let socket: Int32
    private let wake = WakeFD()
    private var reader: WebSocketFrameReader
    private var closeSent = false

    /// Connects and completes the upgrade handshake within `timeoutMs`. Messages over
    /// `messageLimit` up to `skipLimit` come out as `.skipped` (see `WebSocketFrameReader`).
    /// `origin` is sent only when given (Mopidy refuses foreign origins; none is fine).
    public init(url: String, timeoutMs: Int = 5000, messageLimit: Int, skipLimit: Int = 0,
                origin: String? = nil) throws(WebSocketError)
    {
        let shown = redactedURL(url)
        self.url = shown
        guard let parts = URLParts.parse(url), parts.scheme == "ws" || parts.scheme == "wss" else {
            throw .badURL(shown)
        }
        // libcurl does the TLS for wss:// (as https://), with verification on.
        var http = parts
        http.scheme = parts.scheme == "wss" ? "https" : "http"

        easy = CurlEasy()
        easy.set(CURLOPT_URL, http.text)
        easy.set(CURLOPT_CONNECT_ONLY, 1)
        easy.set(CURLOPT_CONNECTTIMEOUT_MS, timeoutMs)
        // Half-open connections (server host gone) are found by the kernel's keepalive probes,
        // which wake this process only when something is wrong.
        easy.set(CURLOPT_TCP_KEEPALIVE, 1)
        easy.set(CURLOPT_TCP_KEEPIDLE, 30)
        easy.set(CURLOPT_TCP_KEEPINTVL, 10)
        do throws(CurlError) { try easy.perform(url: self.url) } catch { throw .connect(error) }
        var fd: curl_socket_t = -1
        _ = gb_curl_getinfo_socket(easy.handle, &fd)
        guard fd >= 0 else { throw .io(url: self.url, reason: "libcurl gave no socket") }
        socket = fd
        reader = WebSocketFrameReader(messageLimit: messageLimit, skipLimit: skipLimit)

        let keyBytes = (0..<16).map { _ in UInt8.random(in: 0...255) }
        let key = base64Encode(keyBytes)
        var request = "GET \(parts.requestTarget) HTTP/1.1\r\nHost: \(parts.hostPort)\r\n"
        request += "Upgrade: websocket\r\nConnection: Upgrade\r\n"
        request += "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n"
        if let origin { request += "Origin: \(origin)\r\n" }
        request += "User-Agent: groove-bridge\r\n\r\n"
        let deadline = monotonicMs() + timeoutMs
        try sendAll(Array(request.utf8), deadline: deadline)
        try readHandshake(expectedAccept: webSocketAccept(forKey: key), deadline: deadline)
    }

    /// Wakes a `receive` blocked on another thread; it then throws `.interrupted`.
    public func interrupt() {
        wake.signal()
    }

    /// The next text or binary message (or a skipped one). Answers pings itself, ignores pongs.
    /// Throws when the server closes, the framing is broken, or `interrupt()` is called.
    public func receive() throws(WebSocketError) -> WebSocketMessage {
        while true {
            let message: WebSocketMessage?
            do throws(WebSocketProtocolError) { message = try reader.next() } catch {
                try? sendFrame(.close, payload: closePayload(1002))
                throw .protocolViolation(url: url, error)
            }
            if let message {
                switch message {
                case .ping(let data): try sendFrame(.pong, payload: data)
                case .pong: break
                case .close(let code, let reason):
                    if !closeSent { try? sendFrame(.close, payload: closePayload(code == 1005 ? 1000 : code)) }
                    closeSent = true
                    throw .closed(url: url, code: code, reason: reason)
                case .text, .binary, .skipped: return message
                }
                continue
            }
            try readMore(deadline: nil)
        }
    }

    public func send(text: String) throws(WebSocketError) {
        try sendFrame(.text, payload: Array(text.utf8))
    }

    /// Sends a close frame (1000) and waits briefly for the server's answer.
    public func closeGracefully(timeoutMs: Int = 1000) {
        guard !closeSent else { return }
        closeSent = true
        try? sendFrame(.close, payload: closePayload(1000))
        let deadline = monotonicMs() + timeoutMs
        while true {
            do throws(WebSocketProtocolError) {
                if case .close = try reader.next() { return }
            } catch { return }
            do throws(WebSocketError) { try readMore(deadline: deadline) } catch { return }
        }
    }

    // MARK: - I/O

    private func closePayload(_ code: UInt16) -> [UInt8] { [UInt8(code >> 8), UInt8(code & 0xFF)] }

    private func sendFrame(_ opcode: Opcode, payload: [UInt8]) throws(WebSocketError) {
        try sendAll(webSocketClientFrame(opcode: opcode.rawValue, payload: payload), deadline: monotonicMs() + 5000)
    }

    private func sendAll(_ bytes: [UInt8], deadline: Int) throws(WebSocketError) {
        var offset = 0
        while offset < bytes.count {
            var sent = 0
            let rc = bytes.withUnsafeBytes { raw in
                curl_easy_send(easy.handle, raw.baseAddress! + offset, raw.count - offset, &sent)
            }
            if rc == CURLE_OK { offset += sent; continue }
            if rc != CURLE_AGAIN { throw .io(url: url, reason: CurlError(rc, url: url).message) }
            try wait(events: Int16(POLLOUT), deadline: deadline, what: "sending")
        }
    }

    /// Reads what is available into the frame reader; blocks (until `deadline`, or forever when
    /// nil) when nothing is. libcurl may hold already-decrypted TLS bytes, so recv comes first.
    private func readMore(deadline: Int?) throws(WebSocketError) {
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            var got = 0
            let rc = chunk.withUnsafeMutableBytes { curl_easy_recv(easy.handle, $0.baseAddress, $0.count, &got) }
            if rc == CURLE_OK {
                if got == 0 { throw .io(url: url, reason: "connection closed by server") }
                reader.feed(chunk[0..<got])
                return
            }
            if rc != CURLE_AGAIN { throw .io(url: url, reason: CurlError(rc, url: url).message) }
            try wait(events: Int16(POLLIN), deadline: deadline, what: "reading")
        }
    }

    private func wait(events: Int16, deadline: Int?, what: String) throws(WebSocketError) {
        var fds = [pollfd(fd: socket, events: events, revents: 0), pollfd(fd: wake.fd, events: Int16(POLLIN), revents: 0)]
        while true {
            let timeout: Int32
            if let deadline {
                let left = deadline - monotonicMs()
                if left <= 0 { throw .timedOut(url: url, what: what) }
                timeout = Int32(clamping: left)
            } else {
                timeout = -1
            }
            let n = poll(&fds, 2, timeout)
            if n < 0 {
                if errno == EINTR { continue }
                throw .io(url: url, reason: "poll: \(String(cString: strerror(errno)))")
            }
            if fds[1].revents != 0 {
                wake.drain()
                throw .interrupted
            }
            if fds[0].revents != 0 { return }
        }
    }

    private func readHandshake(expectedAccept: String, deadline: Int) throws(WebSocketError) {
        var head: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1)
        // Byte by byte up to the blank line, so no frame bytes after it are consumed here.
        while !(head.count >= 4 && head.suffix(4) == [13, 10, 13, 10]) {
            if head.count > 16384 { throw .handshake(url: url, reason: "response headers too long") }
            var got = 0
            let rc = chunk.withUnsafeMutableBytes { curl_easy_recv(easy.handle, $0.baseAddress, 1, &got) }
            if rc == CURLE_OK {
                if got == 0 { throw .handshake(url: url, reason: "connection closed during handshake") }
                head.append(chunk[0])
            } else if rc == CURLE_AGAIN {
                do throws(WebSocketError) { try wait(events: Int16(POLLIN), deadline: deadline, what: "waiting for the handshake") }
                catch { throw .handshake(url: url, reason: error.description) }
            } else {
                throw .handshake(url: url, reason: CurlError(rc, url: url).message)
            }
        }
        let text = String(decoding: head, as: UTF8.self)
        let lines = text.split(separator: "\r\n", omittingEmptySubsequences: true)
        guard let status = lines.first else { throw .handshake(url: url, reason: "empty response") }
        switch WebSocketError.status(ofLine: status) {
        case 101?: break
        case let code?: throw .rejected(url: url, httpStatus: code, statusLine: String(status.prefix(120)))
        case nil: throw .handshake(url: url, reason: "server answered \(status.prefix(120))")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingSpaces()
        }
        guard headers["upgrade"]?.lowercased() == "websocket" else {
            throw .handshake(url: url, reason: "no 'Upgrade: websocket' in the response")
        }
        guard headers["sec-websocket-accept"] == expectedAccept else {
            throw .handshake(url: url, reason: "Sec-WebSocket-Accept does not match the key")
        }
    }
}

extension Substring {
    func trimmingSpaces() -> String {
        String(drop(while: { $0 == " " || $0 == "\t" }).reversed().drop(while: { $0 == " " || $0 == "\t" }).reversed())
    }
}

