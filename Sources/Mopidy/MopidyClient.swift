import Net
import Support
import Synchronization

public enum MopidyError: Error, CustomStringConvertible, Sendable {
    /// The server could not be reached or did not answer in time.
    case unreachable(url: String, reason: String)
    /// An HTTP status other than 200 (e.g. nginx's 502 page while Mopidy is down).
    case httpStatus(url: String, status: Int, snippet: String)
    /// The reply was not JSON or not a JSON-RPC 2.0 reply.
    case badReply(url: String, reason: String)
    /// Mopidy answered with a JSON-RPC error object.
    case rpc(url: String, method: String, code: Int, message: String)

    public var description: String {
        switch self {
        case .unreachable(let url, let r): return "Mopidy at \(url) is unreachable: \(r)"
        case .httpStatus(let url, let s, let snip):
            return "Mopidy at \(url) answered HTTP \(s)\(snip.isEmpty ? "" : ": \(snip)")"
        case .badReply(let url, let r): return "Mopidy at \(url) sent a bad reply: \(r)"
        case .rpc(let url, let m, let code, let msg): return "Mopidy at \(url) refused \(m): \(msg) (\(code))"
        }
    }

    /// The kind a decision reads (a proxy in front of Mopidy refusing the password answers 401
    /// or 403), with the words above.
    public var reason: FailureReason {
        if case .httpStatus(_, let status, _) = self { return FailureReason(.init(httpStatus: status), description) }
        return FailureReason(description)
    }
}

/// Where a Mopidy server answers: JSON-RPC over HTTP and events over WebSocket.
public struct MopidyEndpoints: Equatable, Sendable {
    public var rpcURL: String
    public var wsURL: String

    public init(rpcURL: String, wsURL: String) {
        self.rpcURL = rpcURL
        self.wsURL = wsURL
    }

    /// Groove Audio's layout: nginx on :8180 in front of Mopidy.
    public static func groove(host: String, port: Int = 8180, secure: Bool = false) -> MopidyEndpoints {
        let h = bracketed(host)
        return MopidyEndpoints(rpcURL: "\(secure ? "https" : "http")://\(h):\(port)/api/mopidy/rpc",
                               wsURL: "\(secure ? "wss" : "ws")://\(h):\(port)/ws/mopidy")
    }

    /// A plain Mopidy's own layout on :6680.
    public static func plain(host: String, port: Int = 6680, secure: Bool = false) -> MopidyEndpoints {
        let h = bracketed(host)
        return MopidyEndpoints(rpcURL: "\(secure ? "https" : "http")://\(h):\(port)/mopidy/rpc",
                               wsURL: "\(secure ? "wss" : "ws")://\(h):\(port)/mopidy/ws")
    }

    /// The layouts to try for a host given alone, in order: Groove Audio's, then plain Mopidy's.
    public static func layouts(host: String, groovePort: Int = 8180, plainPort: Int = 6680,
                               secure: Bool = false) -> [MopidyEndpoints] {
        [groove(host: host, port: groovePort, secure: secure), plain(host: host, port: plainPort, secure: secure)]
    }

    /// The HTTP base that relative image URIs (Mopidy-Local's `/local/…`) resolve against: the
    /// RPC URL's `scheme://[userinfo@]host[:port]` (the RPC URL itself when it does not parse).
    public var httpBase: String {
        guard let parts = URLParts.parse(rpcURL) else { return rpcURL }
        return parts.scheme + "://" + parts.authority
    }
}

/// IPv6 literals need brackets in URLs: ::1 → [::1].
public func bracketed(_ host: String) -> String { URLParts.bracketed(host) }

/// JSON-RPC 2.0 calls to Mopidy over one kept-alive HTTP connection. Blocking: call from a worker
/// thread. Thread-safe (the HTTP client serialises requests).
public final class MopidyClient: Sendable {
    private let current: Mutex<MopidyEndpoints>
    private let http: HTTPClient
    private let ids = AtomicCounter()

    public init(endpoints: MopidyEndpoints, timeouts: HTTPTimeouts = HTTPTimeouts()) {
        self.current = Mutex(endpoints)
        self.http = HTTPClient(timeouts: timeouts)
    }

    /// Where calls go now.
    public var endpoints: MopidyEndpoints { current.withLock { $0 } }

    /// Sends later calls to `endpoints` (the layout that answered, when a host was given alone).
    public func use(_ endpoints: MopidyEndpoints) { current.withLock { $0 = endpoints } }

    /// Calls `method` with named `params` and returns its `result`, of which a list holds at most
    /// its first `MopidyLimits.listElements` elements.
    @discardableResult
    public func call(_ method: String, _ params: [String: JSON] = [:]) throws(MopidyError) -> JSON {
        let id = ids.next()
        let request = JSON.object(["jsonrpc": .string("2.0"), "id": .number(Double(id)),
                                   "method": .string(method), "params": .object(params)])
        let url = endpoints.rpcURL
        let response: HTTPResponse
        do throws(HTTPError) {
            // Mopidy's CSRF protection requires this exact content type on RPC POSTs.
            response = try http.post(url, body: Array(request.serialized().utf8),
                                     headers: ["Content-Type: application/json", "Accept: application/json"],
                                     limit: MopidyLimits.replyBytes)
        } catch {
            if case .tooLarge(_, let limit) = error {
                throw .badReply(url: url, reason: "the reply to \(method) is larger than \(byteCount(limit)), "
                                + "the limit for one Mopidy reply")
            }
            throw .unreachable(url: url, reason: "\(error)")
        }
        guard response.status == 200 else {
            throw .httpStatus(url: url, status: response.status, snippet: MopidyClient.snippet(response.body))
        }
        let reply: JSON
        do throws(JSONError) {
            reply = try JSON.parse(response.body, maxTreeBytes: MopidyLimits.treeBytes,
                                   maxArrayElements: MopidyLimits.listElements)
        } catch {
            let kind = response.contentType.map { " (Content-Type \($0))" } ?? ""
            throw .badReply(url: url, reason: "\(error)\(kind): \(MopidyClient.snippet(response.body))")
        }
        if let err = reply["error"], !err.isNull {
            let message = err["message"]?.string ?? "unknown error"
            let detail = err["data"]?["message"]?.string.map { ": \($0)" } ?? ""
            throw .rpc(url: url, method: method, code: err["code"]?.int ?? 0, message: message + detail)
        }
        guard reply["jsonrpc"]?.string == "2.0", let result = reply["result"] else {
            throw .badReply(url: url, reason: "no 'result' in the reply to \(method)")
        }
        if let rid = reply["id"]?.int, rid != id {
            throw .badReply(url: url, reason: "reply id \(rid) does not match request id \(id)")
        }
        return result
    }

    /// The first bytes of a body, printable, for error messages.
    static func snippet(_ body: [UInt8]) -> String {
        let text = String(decoding: body.prefix(160), as: UTF8.self)
        let flat = String(text.map { $0.isNewline || $0 == "\t" ? " " : $0 })
        return flat.count < text.count || body.count > 160 ? flat + "…" : flat
    }

    // MARK: - Typed calls

    public func currentTlTrack() throws(MopidyError) -> TlTrack? {
        TlTrack(json: try call("core.playback.get_current_tl_track"))
    }

    public func state() throws(MopidyError) -> PlaybackState {
        let r = try call("core.playback.get_state")
        guard let s = r.string.flatMap(PlaybackState.init(rawValue:)) else {
            throw .badReply(url: endpoints.rpcURL, reason: "get_state returned \(r.serialized().prefix(80))")
        }
        return s
    }

    public func timePositionMs() throws(MopidyError) -> Int {
        Optional(try call("core.playback.get_time_position")).clampedInt(ServerRange.positionMs, "get_time_position's result") ?? 0
    }

    /// 0–100, nil when Mopidy has no mixer.
    public func volume() throws(MopidyError) -> Int? {
        Optional(try call("core.mixer.get_volume")).clampedInt(ServerRange.volume, "get_volume's result")
    }

    public func setVolume(_ v: Int) throws(MopidyError) {
        try call("core.mixer.set_volume", ["volume": .number(Double(min(100, max(0, v))))])
    }

    public func mute() throws(MopidyError) -> Bool { try call("core.mixer.get_mute").bool ?? false }

    public func setMute(_ on: Bool) throws(MopidyError) {
        try call("core.mixer.set_mute", ["mute": .bool(on)])
    }

    public func uriSchemes() throws(MopidyError) -> [String] {
        (try call("core.get_uri_schemes").array ?? []).compactMap(\.string)
    }

    public func version() throws(MopidyError) -> String { try call("core.get_version").string ?? "?" }

    public func play(tlid: Int? = nil) throws(MopidyError) {
        try call("core.playback.play", tlid.map { ["tlid": .number(Double($0))] } ?? [:])
    }
    public func pause() throws(MopidyError) { try call("core.playback.pause") }
    public func resume() throws(MopidyError) { try call("core.playback.resume") }
    public func stop() throws(MopidyError) { try call("core.playback.stop") }
    public func next() throws(MopidyError) { try call("core.playback.next") }
    public func previous() throws(MopidyError) { try call("core.playback.previous") }
    public func seek(toMs ms: Int) throws(MopidyError) {
        try call("core.playback.seek", ["time_position": .number(Double(max(0, ms)))])
    }

    public func nextTlid() throws(MopidyError) -> Int? { try tlid("core.tracklist.get_next_tlid") }
    public func previousTlid() throws(MopidyError) -> Int? { try tlid("core.tracklist.get_previous_tlid") }
    public func eotTlid() throws(MopidyError) -> Int? { try tlid("core.tracklist.get_eot_tlid") }

    private func tlid(_ method: String) throws(MopidyError) -> Int? {
        Optional(try call(method)).intWithin(ServerRange.tlid, "\(method)'s result")
    }

    public func option(_ name: String) throws(MopidyError) -> Bool {
        try call("core.tracklist.get_\(name)").bool ?? false
    }
    public func setOption(_ name: String, _ value: Bool) throws(MopidyError) {
        try call("core.tracklist.set_\(name)", ["value": .bool(value)])
    }

    /// Images for one URI, largest first.
    public func images(for uri: String) throws(MopidyError) -> [Image] {
        Image.list(try call("core.library.get_images", ["uris": .array([.string(uri)])]), for: uri)
    }
}
