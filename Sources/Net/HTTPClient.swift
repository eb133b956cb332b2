import CCurl
import Support
import Synchronization

/// The answer to an HTTP request: status, content type and body (bounded by the caller's limit).
public struct HTTPResponse: Sendable {
    public let status: Int
    public let contentType: String?
    public let body: [UInt8]
}

public enum HTTPError: Error, CustomStringConvertible, Sendable {
    case transport(CurlError)
    case tooLarge(url: String, limit: Int)

    public var description: String {
        switch self {
        case .transport(let e): return e.description
        case .tooLarge(let url, let limit): return "\(url): reply larger than \(byteCount(limit))"
        }
    }
}

/// Timeouts for one kind of request, in milliseconds.
public struct HTTPTimeouts: Sendable {
    public var connectMs: Int
    public var totalMs: Int
    public init(connectMs: Int = 3000, totalMs: Int = 5000) {
        self.connectMs = connectMs
        self.totalMs = totalMs
    }
}

/// Blocking HTTP requests over one kept-alive libcurl handle, so repeated calls to the same server
/// reuse one TCP connection. Thread-safe: requests are serialised by a mutex; call it from a
/// worker thread, never from the D-Bus or audio thread.
public final class HTTPClient: Sendable {
    private let easy: Mutex<CurlEasySendable>
    public let timeouts: HTTPTimeouts

    public init(timeouts: HTTPTimeouts = HTTPTimeouts()) {
        self.timeouts = timeouts
        self.easy = Mutex(CurlEasySendable(CurlEasy()))
    }

    /// POSTs `body` and returns the whole reply (at most `limit` bytes).
    public func post(_ url: String, body: [UInt8], headers: [String], limit: Int)
        throws(HTTPError) -> HTTPResponse
    {
        try request(url, method: .post(body), headers: headers, limit: limit, timeouts: timeouts)
    }

    /// GETs `url` (redirects followed) and returns the whole reply (at most `limit` bytes).
    public func get(_ url: String, headers: [String] = [], limit: Int, timeouts: HTTPTimeouts? = nil)
        throws(HTTPError) -> HTTPResponse
    {
        try request(url, method: .get, headers: headers, limit: limit, timeouts: timeouts ?? self.timeouts)
    }

    private enum Method { case get, post([UInt8]) }

    private func request(_ url: String, method: Method, headers: [String], limit: Int,
                         timeouts: HTTPTimeouts) throws(HTTPError) -> HTTPResponse
    {
        let result: Result<HTTPResponse, HTTPError> = easy.withLock { box in
            // A new CA file (configuration reload) needs a new handle: the kept-alive
            // connection was verified against the old one.
            if box.easy.trustedCAFile != TLSTrust.caFile { box = CurlEasySendable(CurlEasy()) }
            let e = box.easy
            let sink = CallbackBox(BodySink(limit: limit, handle: e.handle))
            let unmanaged = Unmanaged.passRetained(sink)
            defer { unmanaged.release() }
            e.set(CURLOPT_URL, url)
            e.set(CURLOPT_CONNECTTIMEOUT_MS, timeouts.connectMs)
            e.set(CURLOPT_TIMEOUT_MS, timeouts.totalMs)
            e.set(CURLOPT_FOLLOWLOCATION, 1)
            e.set(CURLOPT_MAXREDIRS, 5)
            e.set(CURLOPT_PROTOCOLS_STR, "http,https")
            e.set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
            e.set(CURLOPT_ACCEPT_ENCODING, "")
            // A Content-Length over the limit fails before any of the body is read.
            _ = gb_curl_setopt_offset(e.handle, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(limit))
            e.setHeaders(headers)
            _ = gb_curl_setopt_data_cb(e.handle, CURLOPT_WRITEFUNCTION, bodyWriteCallback)
            _ = gb_curl_setopt_pointer(e.handle, CURLOPT_WRITEDATA, unmanaged.toOpaque())
            var bodyCopy: [UInt8] = []
            switch method {
            case .get:
                e.set(CURLOPT_HTTPGET, 1)
            case .post(let body):
                bodyCopy = body
                e.set(CURLOPT_POST, 1)
                _ = gb_curl_setopt_offset(e.handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count))
            }
            let outcome: Result<Void, CurlError> = bodyCopy.withUnsafeMutableBytes { raw in
                if case .post = method {
                    _ = gb_curl_setopt_pointer(e.handle, CURLOPT_POSTFIELDS, raw.baseAddress)
                }
                // The body's address is valid only inside this closure: the handle lets go of it
                // before the closure ends.
                defer { _ = gb_curl_setopt_pointer(e.handle, CURLOPT_POSTFIELDS, nil) }
                do throws(CurlError) {
                    try e.perform(url: redactedURL(url))
                    return .success(())
                } catch { return .failure(error) }
            }
            if sink.value.overflow || outcome.isFileSizeExceeded {
                return .failure(.tooLarge(url: redactedURL(url), limit: limit))
            }
            if case .failure(let err) = outcome { return .failure(.transport(err)) }
            return .success(HTTPResponse(status: e.responseCode(), contentType: e.contentType(),
                                         body: sink.value.bytes))
        }
        return try result.get()
    }
}

extension Result where Failure == CurlError {
    /// libcurl refused a body whose Content-Length is over CURLOPT_MAXFILESIZE.
    var isFileSizeExceeded: Bool {
        if case .failure(let e) = self { return e.code == Int(CURLE_FILESIZE_EXCEEDED.rawValue) }
        return false
    }
}

/// Wraps the non-Sendable handle so the mutex can hold it; the mutex is what makes it safe.
struct CurlEasySendable: @unchecked Sendable {
    let easy: CurlEasy
    init(_ easy: CurlEasy) { self.easy = easy }
}

struct BodySink {
    let limit: Int
    let handle: UnsafeMutableRawPointer
    var bytes: [UInt8] = []
    var overflow = false

    /// Makes room for the whole body at its first bytes when the server said its length: a
    /// body of megabytes is then copied once, not through every doubling of the array.
    mutating func reserveForContentLength() {
        var length: curl_off_t = -1
        _ = gb_curl_getinfo_offset(handle, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length)
        if length > 0 && length <= limit { bytes.reserveCapacity(Int(length)) }
    }
}

private let bodyWriteCallback: gb_curl_data_cb = { ptr, size, count, user in
    // libcurl's sizes, saturated: a product or sum that wrapped would pass the limit check.
    let n = size.multiplied(saturating: count)
    guard let user, let ptr else { return 0 }
    let box = Unmanaged<CallbackBox<BodySink>>.fromOpaque(user).takeUnretainedValue()
    if box.value.bytes.isEmpty { box.value.reserveForContentLength() }
    let needed = box.value.bytes.count.adding(saturating: n)
    if needed > box.value.limit {
        box.value.overflow = true
        return 0  // makes libcurl abort the transfer with CURLE_WRITE_ERROR
    }
    // A body of unsaid length past 64 KiB gets room for the whole limit at once: untouched pages
    // of a large allocation take no memory, and the array is not copied at every doubling (a
    // doubling from 4 to 8 MiB holds both).
    if needed > box.value.bytes.capacity && box.value.bytes.capacity >= 1 << 16 {
        box.value.bytes.reserveCapacity(box.value.limit)
    }
    ptr.withMemoryRebound(to: UInt8.self, capacity: n) {
        box.value.bytes.append(contentsOf: UnsafeBufferPointer(start: $0, count: n))
    }
    return n
}
