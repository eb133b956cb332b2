import CCurl
import Synchronization

/// A libcurl failure, with curl's own words and what we were doing.
public struct CurlError: Error, CustomStringConvertible, Sendable {
    public let code: Int
    public let message: String
    public let url: String

    init(_ code: CURLcode, url: String, detail: String? = nil) {
        self.code = Int(code.rawValue)
        let text = String(cString: curl_easy_strerror(code))
        self.message = detail.map { $0.isEmpty ? text : "\(text): \($0)" } ?? text
        self.url = url
    }

    public var description: String { "\(url): \(message)" }

    /// Timeouts, refused connections, DNS failures: worth retrying later.
    public var isTimeout: Bool { code == Int(CURLE_OPERATION_TIMEDOUT.rawValue) }

    /// The server's certificate did not verify (or the CA file is unusable).
    public var isCertificateProblem: Bool {
        [CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR,
         CURLE_SSL_PINNEDPUBKEYNOTMATCH].contains { Int($0.rawValue) == code }
    }
}

/// `curl_global_init` must run once before any handle exists, and is not thread-safe itself.
enum CurlGlobal {
    private static let once: Void = {
        curl_global_init(Int(CURL_GLOBAL_DEFAULT))
    }()
    static func ensure() { _ = once }
}

/// The certificate authorities that verify https/wss servers besides the system's: a PEM file
/// (e.g. a home server's own CA), or none. Verification itself is never turned off. Every
/// connection reads it as it opens, so a configuration reload takes effect on the next one.
public enum TLSTrust {
    private static let file = Mutex<String?>(nil)
    public static func use(caFile: String?) { file.withLock { $0 = caFile } }
    public static var caFile: String? { file.withLock { $0 } }
}

/// One libcurl easy handle. Not thread-safe: one thread uses it at a time (its owner says which).
/// Frees the handle in `deinit`.
final class CurlEasy {
    let handle: UnsafeMutableRawPointer
    /// Where libcurl writes a failure's detail (CURLOPT_ERRORBUFFER). libcurl keeps the pointer
    /// for the handle's whole life, so the buffer is allocated here rather than borrowed from a
    /// Swift array, whose storage has an address only inside `withUnsafe…`.
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private var lists: [UnsafeMutablePointer<curl_slist>] = []

    init() {
        CurlGlobal.ensure()
        guard let h = curl_easy_init() else {
            // curl_easy_init fails only when out of memory.
            fatalError("curl_easy_init returned NULL (out of memory)")
        }
        handle = h
        trustedCAFile = TLSTrust.caFile
        let size = Int(CURL_ERROR_SIZE) + 1
        errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: size)
        errorBuffer.initialize(repeating: 0, count: size)
        _ = gb_curl_setopt_pointer(h, CURLOPT_ERRORBUFFER, errorBuffer)
        set(CURLOPT_NOSIGNAL, 1)  // threads + timeouts: never use SIGALRM
        _ = gb_curl_open_sockets_cloexec(h)
        if let trustedCAFile { set(CURLOPT_CAINFO, trustedCAFile) }
    }

    /// The CA file this handle was made with (see `TLSTrust`).
    let trustedCAFile: String?

    deinit {
        curl_easy_cleanup(handle)
        for l in lists { curl_slist_free_all(l) }
        // libcurl may write into it for as long as the handle exists.
        errorBuffer.deallocate()
    }

    func set(_ option: CURLoption, _ value: Int) {
        _ = gb_curl_setopt_long(handle, option, value)
    }

    /// libcurl copies string options (since 7.17), so a temporary C string is enough.
    func set(_ option: CURLoption, _ value: String) {
        _ = value.withCString { gb_curl_setopt_string(handle, option, $0) }
    }

    func setHeaders(_ headers: [String]) {
        var list: UnsafeMutablePointer<curl_slist>? = nil
        for h in headers { list = h.withCString { curl_slist_append(list, $0) } }
        _ = gb_curl_setopt_slist(handle, CURLOPT_HTTPHEADER, list)
        if let list { lists.append(list) }
        // Keep at most the list in use alive; older ones are no longer referenced by the handle.
        while lists.count > 1 { curl_slist_free_all(lists.removeFirst()) }
    }

    /// The detail libcurl wrote into the error buffer for the last failure, if any.
    var lastErrorDetail: String { String(cString: errorBuffer) }

    func clearErrorDetail() { errorBuffer[0] = 0 }

    func responseCode() -> Int {
        var code = 0
        _ = gb_curl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &code)
        return code
    }

    func contentType() -> String? {
        var ptr: UnsafeMutablePointer<CChar>? = nil
        _ = gb_curl_getinfo_string(handle, CURLINFO_CONTENT_TYPE, &ptr)
        return ptr.map { String(cString: $0) }
    }

    func perform(url: String) throws(CurlError) {
        clearErrorDetail()
        let rc = curl_easy_perform(handle)
        if rc != CURLE_OK { throw CurlError(rc, url: url, detail: lastErrorDetail) }
    }
}

/// A URL for logs and messages, without its user info (credentials). The rest is shown as
/// written, less any fragment. Text that does not parse as a URL is shown only when it has no '@'
/// (where credentials could stand).
public func redactedURL(_ url: String) -> String {
    guard let parts = URLParts.parse(url) else { return url.contains("@") ? "(a URL that does not parse)" : url }
    guard parts.userinfo != nil else { return url }
    var shown = parts
    shown.userinfo = nil
    return shown.text
}

/// The libcurl version string, e.g. for `--version`.
public func curlVersion() -> String { String(cString: curl_version()) }

/// A boxed value that C callbacks can reach through an `Unmanaged` pointer.
final class CallbackBox<T>: @unchecked Sendable {
    // Touched only by the thread that runs the transfer which owns this box.
    var value: T
    init(_ value: T) { self.value = value }
}

/// A counter for request ids and similar, safe from any thread.
public final class AtomicCounter: Sendable {
    private let value = Atomic<Int>(0)
    public init() {}
    public func next() -> Int { value.add(1, ordering: .relaxed).newValue }
}
