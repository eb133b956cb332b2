@testable import Audio
@testable import Bridge
import Mopidy
@testable import Net
import XCTest

/// "Sign in again": which failures are a refused password, and one notification per episode.
final class SignInTests: XCTestCase {
    typealias Rig = ReducerTests.Rig
    static let streamURL = "http://127.0.0.1:1/stream.flac"

    /// The stream player's own words for a refusal, made by its ReconnectPolicy.
    static func streamRefused(_ code: Int = 401) -> StreamStatus {
        var policy = ReconnectPolicy()
        return policy.next(after: ReconnectPolicy.Outcome(end: .httpStatus(code)), url: streamURL, user: "listener",
                           slowRetryMs: 30_000, nowMs: 0)
    }

    /// Each producer decides the kind where it sees the status: the stream's policy, Mopidy's RPC
    /// client, the WebSocket handshake.
    func testWhichFailuresAreARefusedPassword() {
        let rpc = "http://127.0.0.1:1/api/mopidy/rpc", ws = "ws://127.0.0.1:1/ws/mopidy"
        let rejected = { (code: Int, line: String) in
            WebSocketError.rejected(url: ws, httpStatus: code, statusLine: line).reason
        }
        let table: [(FailureReason?, FailureReason.Kind)] = [
            (Self.failure(Self.streamRefused(401)), .unauthorized(httpStatus: 401)),
            (Self.failure(Self.streamRefused(403)), .unauthorized(httpStatus: 403)),
            (MopidyError.httpStatus(url: rpc, status: 401, snippet: "").reason, .unauthorized(httpStatus: 401)),
            (MopidyError.httpStatus(url: rpc, status: 403, snippet: "Forbidden").reason, .unauthorized(httpStatus: 403)),
            (MopidyError.httpStatus(url: rpc, status: 502, snippet: "<html>").reason, .other),
            (MopidyError.httpStatus(url: rpc, status: 4010, snippet: "").reason, .other),
            (MopidyError.unreachable(url: rpc, reason: "Connection refused (HTTP 401)").reason, .other),
            (MopidyError.rpc(url: rpc, method: "core.get_version", code: 401, message: "answered HTTP 401").reason, .other),
            (rejected(401, "HTTP/1.1 401 Unauthorized"), .unauthorized(httpStatus: 401)),
            (rejected(403, "HTTP/1.1 403 Forbidden"), .unauthorized(httpStatus: 403)),
            (rejected(404, "HTTP/1.1 404 Not Found"), .other),
            (WebSocketError.handshake(url: ws, reason: "server answered HTTP/1.1 401 Unauthorized").reason, .other),
        ]
        for (i, (reason, kind)) in table.enumerated() {
            XCTAssertEqual(reason?.kind, kind, "row \(i): \(reason?.message ?? "no failure")")
        }
        // The stream's transient failures are no refusal and carry no kind.
        XCTAssertNil(Self.failure(Self.streamRefused(404)))
        XCTAssertNil(Self.failure(Self.streamRefused(502)))
        // The words for people still say what happened.
        XCTAssertEqual(rejected(401, "HTTP/1.1 401 Unauthorized").message,
                       "\(ws): WebSocket handshake failed: server answered HTTP/1.1 401 Unauthorized")
    }

    /// The status line of a handshake's answer, as `WebSocketConnection` reads it.
    func testTheHandshakesStatusLine() {
        let table: [(Substring, Int?)] = [
            ("HTTP/1.1 101 Switching Protocols", 101), ("HTTP/1.1 401 Unauthorized", 401), ("HTTP/1.0 403", 403),
            ("HTTP/1.1 4010 Odd", nil), ("HTTP/1.1 +01 Odd", nil), ("HTTP/1.1", nil), ("", nil), ("garbage", nil),
            ("HTTP/1.1 ４０１ Wide", nil),
        ]
        for (line, want) in table { XCTAssertEqual(WebSocketError.status(ofLine: line), want, String(line)) }
    }

    /// The notice follows the kind, whatever the words: a reworded message still asks, and the
    /// old words on another kind do not.
    func testTheKindDecidesNotTheWords() {
        let reworded = FailureReason(.unauthorized(httpStatus: 401), "Icecast says no")
        let oldWords = FailureReason("stream refused the password for user 'listener' at x (HTTP 401); Mopidy at x answered HTTP 401")
        let inputs: [(FailureReason, Int) -> Input] = [
            { .streamStatus(.failed(reason: $0, retryInMs: 30_000), sequence: $1) },
            { r, _ in .eventsDisconnected(reason: r) },
            { r, _ in .reply(.failed(.next, reason: r)) },
        ]
        for (i, make) in inputs.enumerated() {
            var r = Rig()
            var sequence = 10
            func input(_ reason: FailureReason) -> Input {
                sequence += 1
                return make(reason, sequence)
            }
            r.feed(input(oldWords))
            XCTAssertEqual(r.trace.filter { $0.hasPrefix("sign in") }, [], "input \(i)")
            XCTAssertNil(r.state.signInNeeded, "input \(i)")
            r.feed(input(reworded))
            XCTAssertEqual(r.trace.filter { $0.hasPrefix("sign in") }.count, 1, "input \(i): \(r.trace)")
            XCTAssertNotNil(r.state.signInNeeded, "input \(i)")
        }
    }

    static func failure(_ s: StreamStatus) -> FailureReason? {
        if case .failed(let r, _) = s { return r }
        return nil
    }

    func testOneNotificationPerEpisodeWhateverNotifySays() {
        var r = Rig()
        XCTAssertFalse(r.state.config.notify)
        let sentence = "sign in: Groove Audio refused the password for listener@127.0.0.1 — run groove-bridge login"
        var seq = 10
        func stream(_ s: StreamStatus) { seq += 1; r.feed(.streamStatus(s, sequence: seq)) }

        // The stream refuses, then its slow retries refuse again: one notification.
        stream(Self.streamRefused())
        XCTAssertEqual(r.trace.filter { $0.hasPrefix("sign in") }, [sentence])
        XCTAssertEqual(r.state.signInNeeded, String(sentence.dropFirst("sign in: ".count)))
        for _ in 0..<3 {
            stream(.connecting)
            stream(Self.streamRefused())
        }
        XCTAssertEqual(r.trace.filter { $0.hasPrefix("sign in") }.count, 1, "\(r.trace)")

        // A late status, older than the refusal, changes nothing.
        r.feed(.streamStatus(.playing, sequence: 2))
        XCTAssertNotNil(r.state.signInNeeded)

        // Mopidy refuses too in the same episode: still one; Mopidy back alone does not end it.
        r.feed(.eventsDisconnected(reason: WebSocketError.rejected(url: "ws://h/ws", httpStatus: 401,
                                                                    statusLine: "HTTP/1.1 401 Unauthorized").reason))
        r.feed(.eventsConnected(url: Rig.ws))
        XCTAssertEqual(r.trace.filter { $0.hasPrefix("sign in") }.count, 1)
        XCTAssertNotNil(r.state.signInNeeded, "the stream still refuses")

        // The stream plays: the episode is over; the next refusal is news.
        stream(.playing)
        XCTAssertNil(r.state.signInNeeded)
        stream(Self.streamRefused())
        XCTAssertEqual(r.trace.filter { $0.hasPrefix("sign in") }.count, 2)

        // A reload with the same credentials is the same episode; new ones start a new one.
        r.feed(.reload(r.state.config))
        stream(Self.streamRefused())
        XCTAssertEqual(r.trace.filter { $0.hasPrefix("sign in") }.count, 2)
        var fixed = r.state.config
        fixed.password = "another"
        r.feed(.reload(fixed))
        XCTAssertNil(r.state.signInNeeded)
        stream(.connecting)
        stream(Self.streamRefused())
        XCTAssertEqual(r.trace.filter { $0.hasPrefix("sign in") }.count, 3)
    }

    func testMopidyRefusingAsksOnceAndItsAnswerEndsTheEpisode() {
        var r = Rig(listening: false)
        let refused = MopidyError.httpStatus(url: "http://127.0.0.1:1/api/mopidy/rpc", status: 401, snippet: "").reason
        r.feed(.reply(.failed(.next, reason: refused)))
        r.feed(.reply(.failed(.resync(generation: r.state.resyncGeneration), reason: refused)))
        XCTAssertEqual(r.trace.filter { $0.hasPrefix("sign in") }.count, 1, "\(r.trace)")
        XCTAssertTrue(r.trace.contains { $0.hasPrefix("log Groove Audio refused the password for listener@127.0.0.1") }, "\(r.trace)")
        r.feed(.eventsConnected(url: Rig.ws))
        XCTAssertNil(r.state.signInNeeded)
        // Other failures are not a refusal.
        r.feed(.reply(.failed(.next, reason: MopidyError.httpStatus(url: "http://h/rpc", status: 502, snippet: "").reason)))
        r.feed(.eventsDisconnected(reason: WebSocketError.closed(url: "ws://h/ws", code: 1001, reason: "").reason))
        XCTAssertEqual(r.trace.filter { $0.hasPrefix("sign in") }.count, 1)
    }

    func testTheAccountAndALockedKeyringAreSaid() {
        var c = Rig.config
        c.host = "musicbox.local"
        c.user = "ada"
        c.passwordSource = .keyringLocked
        var r = Rig(config: c)
        r.feed(.streamStatus(Self.streamRefused(), sequence: 5))
        XCTAssertEqual(r.trace.filter { $0.hasPrefix("sign in") },
                       ["sign in: Groove Audio needs the password for ada@musicbox.local from the locked keyring — "
                        + "unlock the keyring, then run systemctl --user reload groove-bridge"])
        var plain = Config()
        plain.rpcURL = "http://[::1]:8180/api/mopidy/rpc"
        XCTAssertEqual(plain.signInAccount, "listener@::1")
    }
}
