import CCurl
import Support

/// What a streaming GET tells its consumer, on the thread that runs `perform`.
public protocol StreamingGetDelegate: AnyObject {
    /// The response headers are in (status and content type). Return false to stop.
    func streamResponse(status: Int, contentType: String?) -> Bool
    /// A chunk of the body. Return false to stop (e.g. paused). May block for backpressure.
    func streamData(_ bytes: UnsafeRawBufferPointer) -> Bool
    /// Asked about once a second and on every chunk: true stops the transfer.
    func streamShouldAbort() -> Bool
}

public enum StreamEnd: Sendable, Equatable {
    /// The server closed the stream (or the consumer stopped it).
    case finished
    case stoppedByConsumer
    case httpStatus(Int)
    case stalled(seconds: Int)
    case failed(String)
    /// The server's TLS certificate did not verify: retrying soon will not help.
    case untrusted(String)
}

/// An endless HTTP GET (an Icecast stream): credentials through libcurl options (never in the
/// URL or argv), redirects followed, TCP keepalive, and a stall timeout so a server that stops
/// sending is noticed. One instance per thread; not thread-safe.
public final class StreamingGet {
    public struct Options: Sendable {
        public var user: String?
        public var password: String?
        public var connectTimeoutMs = 5000
        /// Less than 1 byte/s for this long counts as a stall. Icecast sends its response headers
        /// together with the first data on non-Ogg mounts, which can take seconds during
        /// silence: keep this well above that.
        public var stallSeconds = 8
        public var userAgent = "groove-bridge"
        public init(user: String? = nil, password: String? = nil) {
            self.user = user
            self.password = password
        }
    }

    private let easy = CurlEasy()

    public init() {}

    public func perform(url: String, options: Options, delegate: StreamingGetDelegate) -> StreamEnd {
        let state = CallbackBox(TransferState(delegate: delegate, handle: easy.handle,
                                               stallMs: options.stallSeconds.multiplied(saturating: 1000), lastDataMs: monotonicMs()))
        let unmanaged = Unmanaged.passRetained(state)
        defer { unmanaged.release() }
        let e = easy
        e.set(CURLOPT_URL, url)
        e.set(CURLOPT_HTTPGET, 1)
        e.set(CURLOPT_FOLLOWLOCATION, 1)
        e.set(CURLOPT_MAXREDIRS, 5)
        e.set(CURLOPT_PROTOCOLS_STR, "http,https")
        e.set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        e.set(CURLOPT_CONNECTTIMEOUT_MS, options.connectTimeoutMs)
        e.set(CURLOPT_TIMEOUT_MS, 0)
        // Stalls are timed from the last byte in the progress callback: curl's own low-speed
        // check averages over a window and fires seconds late.
        e.set(CURLOPT_LOW_SPEED_TIME, 0)
        e.set(CURLOPT_TCP_KEEPALIVE, 1)
        // 4xx/5xx end the transfer with their status; their bodies are not audio.
        e.set(CURLOPT_FAILONERROR, 1)
        e.set(CURLOPT_USERAGENT, options.userAgent)
        if let user = options.user, let password = options.password {
            e.set(CURLOPT_HTTPAUTH, 1)  // CURLAUTH_BASIC (a macro Swift does not import)
            e.set(CURLOPT_USERNAME, user)
            e.set(CURLOPT_PASSWORD, password)
            // Never resend credentials to another host after a redirect.
            e.set(CURLOPT_UNRESTRICTED_AUTH, 0)
        }
        e.setHeaders(["Icy-MetaData: 0"])
        e.set(CURLOPT_NOPROGRESS, 0)
        _ = gb_curl_setopt_data_cb(e.handle, CURLOPT_WRITEFUNCTION, streamWriteCallback)
        _ = gb_curl_setopt_pointer(e.handle, CURLOPT_WRITEDATA, unmanaged.toOpaque())
        _ = gb_curl_setopt_xferinfo_cb(e.handle, streamProgressCallback)
        _ = gb_curl_setopt_pointer(e.handle, CURLOPT_XFERINFODATA, unmanaged.toOpaque())
        e.clearErrorDetail()
        let rc = curl_easy_perform(e.handle)
        // Forget the credentials on the handle between transfers.
        e.set(CURLOPT_PASSWORD, "")
        let s = state.value
        if s.stalled { return .stalled(seconds: options.stallSeconds) }
        if s.consumerStopped { return .stoppedByConsumer }
        switch rc {
        case CURLE_OK: return .finished
        default:
            let status = e.responseCode()
            if status >= 400 { return .httpStatus(status) }
            let error = CurlError(rc, url: redactedURL(url), detail: e.lastErrorDetail)
            return error.isCertificateProblem ? .untrusted(error.message) : .failed(error.message)
        }
    }
}

struct TransferState {
    let delegate: StreamingGetDelegate
    let handle: UnsafeMutableRawPointer
    let stallMs: Int
    var lastDataMs: Int
    var gotHeaders = false
    var stalled = false
    var consumerStopped = false
}

private func streamState(_ user: UnsafeMutableRawPointer?) -> CallbackBox<TransferState> {
    Unmanaged<CallbackBox<TransferState>>.fromOpaque(user!).takeUnretainedValue()
}

private let streamWriteCallback: gb_curl_data_cb = { ptr, size, count, user in
    let box = streamState(user)
    let n = size.multiplied(saturating: count)
    guard let ptr else { return 0 }
    box.value.lastDataMs = monotonicMs()
    if !box.value.gotHeaders {
        // The first body bytes: the final response's status and type are known now (libcurl
        // allows getinfo inside callbacks). Icecast sends headers only with data on non-Ogg
        // mounts, so this is also the first sign of life.
        box.value.gotHeaders = true
        var status = 0
        _ = gb_curl_getinfo_long(box.value.handle, CURLINFO_RESPONSE_CODE, &status)
        var ct: UnsafeMutablePointer<CChar>? = nil
        _ = gb_curl_getinfo_string(box.value.handle, CURLINFO_CONTENT_TYPE, &ct)
        if !box.value.delegate.streamResponse(status: status, contentType: ct.map { String(cString: $0) }) {
            box.value.consumerStopped = true
            return 0
        }
    }
    if box.value.delegate.streamShouldAbort() {
        box.value.consumerStopped = true
        return 0
    }
    if !box.value.delegate.streamData(UnsafeRawBufferPointer(start: ptr, count: n)) {
        box.value.consumerStopped = true
        return 0
    }
    return n
}

private let streamProgressCallback: gb_curl_xferinfo_cb = { user, _, _, _, _ in
    let box = streamState(user)
    if monotonicMs() - box.value.lastDataMs > box.value.stallMs {
        box.value.stalled = true
        return 1
    }
    if box.value.delegate.streamShouldAbort() {
        box.value.consumerStopped = true
        return 1
    }
    return 0
}
