@testable import Audio
import Net
import XCTest

final class ReconnectPolicyTests: XCTestCase {
    let url = "http://127.0.0.1:18000/stream.flac"

    func policy() -> ReconnectPolicy { ReconnectPolicy() }

    func next(_ p: inout ReconnectPolicy, _ end: StreamEnd, failure: ReconnectPolicy.Failure? = nil, playedMs: Int = 0,
              user: String? = "listener", atMs: Int = 1000) -> StreamStatus {
        p.next(after: ReconnectPolicy.Outcome(end: end, failure: failure, playedMs: playedMs), url: url, user: user,
               slowRetryMs: 30_000, nowMs: atMs)
    }

    /// Each way a connection can end, as the first end after a fresh start: the README and the
    /// rig tests quote these texts.
    func testEachEndAndItsStatus() {
        let table: [(StreamEnd, ReconnectPolicy.Failure?, StreamStatus)] = [
            (.httpStatus(401), nil, .failed(reason: FailureReason(.unauthorized(httpStatus: 401),
                                                          "stream refused the password for user 'listener' at \(url) (HTTP 401)"),
                                      retryInMs: 30_000)),
            (.httpStatus(403), nil, .failed(reason: FailureReason(.unauthorized(httpStatus: 403),
                                                          "stream refused the password for user 'listener' at \(url) (HTTP 403)"),
                                      retryInMs: 30_000)),
            (.httpStatus(404), nil, .reconnecting(inMs: 250, reason: "no stream at \(url) (HTTP 404)")),
            (.httpStatus(502), nil, .reconnecting(inMs: 250, reason: "\(url) answered HTTP 502")),
            (.stalled(seconds: 8), nil, .reconnecting(inMs: 250, reason: "no data from \(url) for 8 s")),
            (.failed("Couldn't connect to server"), nil, .reconnecting(inMs: 250, reason: "\(url): Couldn't connect to server")),
            (.untrusted("SSL certificate problem: self-signed certificate"), nil,
             .failed(reason: FailureReason("\(url): SSL certificate problem: self-signed certificate (a server with its own certificate authority: set ca_file)"),
                     retryInMs: 30_000)),
            (.finished, nil, .reconnecting(inMs: 250, reason: "\(url) ended the stream")),
            (.stoppedByConsumer, nil, .reconnecting(inMs: 250, reason: "\(url) ended the stream")),
            // What the decoder found wins over how the transfer ended.
            (.finished, ReconnectPolicy.Failure(reason: "stream at \(url) is not FLAC", permanent: true),
             .failed(reason: FailureReason("stream at \(url) is not FLAC"), retryInMs: 30_000)),
            (.stoppedByConsumer, ReconnectPolicy.Failure(reason: "sound output failed: Connection terminated", permanent: false),
             .reconnecting(inMs: 250, reason: "sound output failed: Connection terminated")),
        ]
        for (end, failure, want) in table {
            var p = policy()
            XCTAssertEqual(next(&p, end, failure: failure), want, "\(end)")
        }
    }

    func testNoUserNamedWhenThereIsNone() {
        var p = policy()
        XCTAssertEqual(next(&p, .httpStatus(401), user: nil),
                       .failed(reason: FailureReason(.unauthorized(httpStatus: 401), "stream refused the password at \(url) (HTTP 401)"),
                               retryInMs: 30_000))
    }

    /// Transient failures follow the home schedule by the time since the outage's first one.
    func testTransientFailuresFollowTheScheduleByTheOutagesAge() {
        var p = policy()
        let delays = [0, 300, 800, 119_000, 121_000, 599_000, 601_000, 3_600_000].map {
            next(&p, .failed("x"), atMs: 1000 + $0).retry?.delayMs  // nil fails the comparison below
        }
        XCTAssertEqual(delays, [250, 500, 500, 500, 5000, 5000, 30_000, 30_000])
    }

    /// What waiting will not fix is retried slowly and leaves the outage's clock alone.
    func testPermanentFailuresDoNotStartTheOutage() {
        var p = policy()
        for end in [StreamEnd.httpStatus(401), .httpStatus(403), .untrusted("x")] { _ = next(&p, end, atMs: 1000) }
        _ = next(&p, .finished, failure: ReconnectPolicy.Failure(reason: "not FLAC", permanent: true), atMs: 1000)
        XCTAssertNil(p.outage.firstFailureMs)
        XCTAssertEqual(next(&p, .failed("x"), atMs: 200_000).retry?.delayMs, 250)
    }

    /// Icecast answers 404 while the mount's source reconnects: quick retries, a clear reason.
    func testNoSuchMountIsRetriedQuickly() {
        var p = policy()
        XCTAssertEqual(next(&p, .httpStatus(404), atMs: 0), .reconnecting(inMs: 250, reason: "no stream at \(url) (HTTP 404)"))
        XCTAssertEqual(next(&p, .httpStatus(404), atMs: 300).retry?.delayMs, 500)
        XCTAssertEqual(next(&p, .httpStatus(404), atMs: 130_000).retry?.delayMs, 5000)
    }

    func testAConnectionThatPlayedTenSecondsEndsTheOutage() {
        var p = policy()
        _ = next(&p, .failed("x"), atMs: 0)
        XCTAssertEqual(next(&p, .finished, playedMs: 9999, atMs: 200_000).retry?.delayMs, 5000, "9.999 s is not enough")
        XCTAssertEqual(next(&p, .finished, playedMs: 10_000, atMs: 300_000).retry?.delayMs, 250)
        XCTAssertEqual(p.failuresInOutage, 1)
        XCTAssertEqual(next(&p, .stalled(seconds: 8), atMs: 300_100).retry?.delayMs, 500)
    }

    func testRestartingTheOutageRetriesQuicklyAgain() {
        var p = policy()
        _ = next(&p, .failed("x"), atMs: 0)
        XCTAssertEqual(next(&p, .failed("x"), atMs: 700_000).retry?.delayMs, 30_000)
        p.restartOutage()
        XCTAssertEqual(next(&p, .failed("x"), atMs: 700_100).retry?.delayMs, 250)
    }

    func testTheSlowRetryIsTheConfiguredOne() {
        var p = policy()
        let s = p.next(after: ReconnectPolicy.Outcome(end: .httpStatus(401)), url: url, user: nil, slowRetryMs: 2000, nowMs: 0)
        XCTAssertEqual(s.retry?.delayMs, 2000)
    }
}

extension ReconnectPolicyTests {
    /// The quick retries are said once per outage: libcurl's times in a reason ("after 3 ms")
    /// differ from one attempt to the next on a busy machine and are no new reason.
    func testAReasonIsTheSameWhateverTheTimesInIt() {
        let a = "http://127.0.0.1:1/stream.flac: Couldn't connect to server: Failed to connect to 127.0.0.1 port 1 after 0 ms: Couldn't connect to server"
        let b = a.replacingText("after 0 ms", with: "after 37 ms")
        XCTAssertEqual(StreamPlayer.withoutTimings(a), StreamPlayer.withoutTimings(b))
        XCTAssertNotEqual(StreamPlayer.withoutTimings(a), StreamPlayer.withoutTimings("no stream at http://127.0.0.1:1/stream.flac (HTTP 404)"))
        XCTAssertEqual(StreamPlayer.withoutTimings("ended after 12 s"), "ended after 12 s", "only milliseconds are times")
        XCTAssertEqual(StreamPlayer.withoutTimings("after "), "after ")
    }
}
