@testable import Audio
@testable import Bridge
import Mopidy
import Net
import XCTest

/// "Sign in again": which failures are a refused password, and one notification per episode.
final class SignInTests: XCTestCase {
    typealias Rig = ReducerTests.Rig
    static let streamURL = "http://127.0.0.1:1/stream.flac"

    /// The stream player's own words for a refusal, made by its ReconnectPolicy.
    static func streamRefused(_ code: Int = 401) -> StreamStatus {
        var policy = ReconnectPolicy()
        return policy.next(after: ConnectionOutcome(end: .httpStatus(code)), url: streamURL, user: "listener",
                           slowRetryMs: 30_000, nowMs: 0)
    }

    func testWhichFailuresAreARefusedPassword() {
        let rpc = "http://127.0.0.1:1/api/mopidy/rpc", ws = "ws://127.0.0.1:1/ws/mopidy"
        let handshake = { (line: String) in
            WebSocketError.handshake(url: ws, reason: "server answered \(line)").description
        }
        let table: [(String, Bool, Bool)] = [  // why, a refusal by the stream?, by Mopidy?
            (Self.reason(Self.streamRefused(401)), true, false),
            (Self.reason(Self.streamRefused(403)), true, false),
            (Self.reason(Self.streamRefused(404)), false, false),
            (Self.reason(Self.streamRefused(502)), false, false),
            (MopidyError.httpStatus(url: rpc, status: 401, snippet: "").description, false, true),
            (MopidyError.httpStatus(url: rpc, status: 403, snippet: "Forbidden").description, false, true),
            (MopidyError.httpStatus(url: rpc, status: 502, snippet: "<html>").description, false, false),
            (MopidyError.httpStatus(url: rpc, status: 4010, snippet: "").description, false, false),
            (handshake("HTTP/1.1 401 Unauthorized"), false, true),
            (handshake("HTTP/1.1 403 Forbidden"), false, true),
            (handshake("HTTP/1.1 404 Not Found"), false, false),
            (MopidyError.unreachable(url: rpc, reason: "Connection refused").description, false, false),
            ("", false, false),
        ]
        for (text, stream, mopidy) in table {
            XCTAssertEqual(PasswordRefusal.fromStream(text), stream, text)
            XCTAssertEqual(PasswordRefusal.fromMopidy(text), mopidy, text)
        }
    }

    static func reason(_ s: StreamStatus) -> String {
        switch s {
        case .failed(let r, _), .reconnecting(_, let r): return r
        default: return ""
        }
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
        r.feed(.eventsDisconnected(reason: WebSocketError.handshake(url: "ws://h/ws", reason: "server answered HTTP/1.1 401 Unauthorized").description))
        r.feed(.eventsConnected)
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
        let refused = MopidyError.httpStatus(url: "http://127.0.0.1:1/api/mopidy/rpc", status: 401, snippet: "").description
        r.feed(.reply(.failed(.next, reason: refused)))
        r.feed(.reply(.failed(.resync(generation: r.state.resyncGeneration), reason: refused)))
        XCTAssertEqual(r.trace.filter { $0.hasPrefix("sign in") }.count, 1, "\(r.trace)")
        XCTAssertTrue(r.trace.contains { $0.hasPrefix("log Groove Audio refused the password for listener@127.0.0.1") }, "\(r.trace)")
        r.feed(.eventsConnected)
        XCTAssertNil(r.state.signInNeeded)
        // Other failures are not a refusal.
        r.feed(.reply(.failed(.next, reason: MopidyError.httpStatus(url: "http://h/rpc", status: 502, snippet: "").description)))
        r.feed(.eventsDisconnected(reason: "ws://h/ws: closed by server (1001)"))
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
