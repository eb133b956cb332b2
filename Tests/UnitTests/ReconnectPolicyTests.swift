@testable import Audio
import Net
import XCTest

final class ReconnectPolicyTests: XCTestCase {
    let url = "http://127.0.0.1:18000/stream.flac"

    /// The longest wait of each step, so delays are exact.
    func policy() -> ReconnectPolicy { ReconnectPolicy(random: { $0.upperBound }) }

    func next(_ p: inout ReconnectPolicy, _ end: StreamEnd, failure: ConnectionFailure? = nil, playedMs: Int = 0,
              user: String? = "listener") -> StreamStatus {
        p.next(after: ConnectionOutcome(end: end, failure: failure, playedMs: playedMs), url: url, user: user, slowRetryMs: 30_000)
    }

    /// Each way a connection can end, as the first end after a fresh start: the README and the
    /// rig tests quote these texts.
    func testEachEndAndItsStatus() {
        let table: [(StreamEnd, ConnectionFailure?, StreamStatus)] = [
            (.httpStatus(401), nil, .failed(reason: "stream refused the password for user 'listener' at \(url) (HTTP 401)", retryInMs: 30_000)),
            (.httpStatus(403), nil, .failed(reason: "stream refused the password for user 'listener' at \(url) (HTTP 403)", retryInMs: 30_000)),
            (.httpStatus(404), nil, .failed(reason: "no stream at \(url) (HTTP 404)", retryInMs: 5000)),
            (.httpStatus(502), nil, .reconnecting(inMs: 500, reason: "\(url) answered HTTP 502")),
            (.stalled(seconds: 8), nil, .reconnecting(inMs: 500, reason: "no data from \(url) for 8 s")),
            (.failed("Couldn't connect to server"), nil, .reconnecting(inMs: 500, reason: "\(url): Couldn't connect to server")),
            (.untrusted("SSL certificate problem: self-signed certificate"), nil,
             .failed(reason: "\(url): SSL certificate problem: self-signed certificate (a server with its own certificate authority: set ca_file)",
                     retryInMs: 30_000)),
            (.finished, nil, .reconnecting(inMs: 500, reason: "\(url) ended the stream")),
            (.stoppedByConsumer, nil, .reconnecting(inMs: 500, reason: "\(url) ended the stream")),
            // What the decoder found wins over how the transfer ended.
            (.finished, ConnectionFailure(reason: "stream at \(url) is not FLAC", permanent: true),
             .failed(reason: "stream at \(url) is not FLAC", retryInMs: 30_000)),
            (.stoppedByConsumer, ConnectionFailure(reason: "sound output failed: Connection terminated", permanent: false),
             .reconnecting(inMs: 500, reason: "sound output failed: Connection terminated")),
        ]
        for (end, failure, want) in table {
            var p = policy()
            XCTAssertEqual(next(&p, end, failure: failure), want, "\(end)")
        }
    }

    func testNoUserNamedWhenThereIsNone() {
        var p = policy()
        XCTAssertEqual(next(&p, .httpStatus(401), user: nil),
                       .failed(reason: "stream refused the password at \(url) (HTTP 401)", retryInMs: 30_000))
    }

    func testTransientFailuresBackOffFromHalfASecondToThirtySeconds() {
        var p = policy()
        let delays = (0..<9).map { _ in next(&p, .failed("x")).retry!.delayMs }
        XCTAssertEqual(delays, [500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000])
    }

    func testJitterDrawsBetweenHalfAndAllOfTheStep() {
        XCTAssertEqual(ReconnectPolicy.backoffRange(attempt: 0), 250...500)
        XCTAssertEqual(ReconnectPolicy.backoffRange(attempt: 3), 2000...4000)
        XCTAssertEqual(ReconnectPolicy.backoffRange(attempt: 100), 15_000...30_000)
        var p = ReconnectPolicy(random: { $0.lowerBound })
        XCTAssertEqual((0..<3).map { _ in next(&p, .finished).retry!.delayMs }, [250, 500, 1000])
    }

    /// What waiting will not fix is retried slowly and leaves the transient schedule alone.
    func testSlowRetriesDoNotAdvanceTheBackoff() {
        var p = policy()
        _ = next(&p, .failed("x"))
        for end in [StreamEnd.httpStatus(401), .httpStatus(403), .untrusted("x")] { _ = next(&p, end) }
        _ = next(&p, .finished, failure: ConnectionFailure(reason: "not FLAC", permanent: true))
        XCTAssertEqual(p.attempts, 1)
        XCTAssertEqual(next(&p, .failed("x")).retry?.delayMs, 1000)
    }

    func testNoSuchMountWaitsAtLeastFiveSecondsAndBacksOff() {
        var p = policy()
        let delays = (0..<7).map { _ in next(&p, .httpStatus(404)).retry!.delayMs }
        XCTAssertEqual(delays, [5000, 5000, 5000, 5000, 8000, 16_000, 30_000])
    }

    func testAConnectionThatPlayedTenSecondsResetsTheBackoff() {
        var p = policy()
        for _ in 0..<4 { _ = next(&p, .failed("x")) }
        XCTAssertEqual(next(&p, .finished, playedMs: 9999).retry?.delayMs, 8000, "9.999 s is not enough")
        XCTAssertEqual(next(&p, .finished, playedMs: 10_000).retry?.delayMs, 500)
        XCTAssertEqual(next(&p, .stalled(seconds: 8)).retry?.delayMs, 1000)
    }

    func testTheSlowRetryIsTheConfiguredOne() {
        var p = policy()
        let s = p.next(after: ConnectionOutcome(end: .httpStatus(401)), url: url, user: nil, slowRetryMs: 2000)
        XCTAssertEqual(s.retry?.delayMs, 2000)
    }
}
