@testable import Audio
import Net
import XCTest

/// The connection's life (`StreamPlayer.Life`): each event, from each state, to the next state,
/// the status shown and what is done, as tables.
final class StreamLifeTests: XCTestCase {
    typealias Life = StreamPlayer.Life
    let a = StreamConnection(ring: ByteRing(capacity: 16), url: "a")
    let b = StreamConnection(ring: ByteRing(capacity: 16), url: "b")

    func name(_ c: StreamConnection) -> String { c === a ? "a" : c === b ? "b" : "?" }

    func state(_ l: Life) -> String {
        switch l.state {
        case .idle: return "idle"
        case .wanted: return "wanted"
        case .connecting(let c): return "connecting \(name(c))"
        case .joining(let c): return "joining \(name(c))"
        case .playing(let c): return "playing \(name(c))"
        case .warm(let c, let since, let until): return "warm \(name(c)) \(since.ms)–\(until.ms)"
        case .switching(let c, let s): return "switching \(name(c))→\(name(s.connection))"
        case .backingOff(let until): return "backing off until \(until?.ms ?? -1)"
        case .failed(let until): return "failed until \(until?.ms ?? -1)"
        }
    }

    func actions(_ list: [Life.Action]) -> [String] {
        list.map {
            switch $0 {
            case .cancel(let c): return "cancel \(name(c))"
            case .publish(let s, _): return "show \(s)"
            case .wakeDecoder: return "wake"
            case .follow(let c, let s): return "follow \(name(c))→\(name(s.connection))"
            case .log(let level, _): return "log \(level)"
            }
        }
    }

    /// Applies each event and records (state after, what was done).
    func run(_ l: inout Life, _ events: [Life.Event]) -> [(String, [String])] {
        events.map { e in
            let done = actions(l.apply(e))
            return (state(l), done)
        }
    }

    func assertSteps(_ l: inout Life, _ steps: [(Life.Event, String, [String])], file: StaticString = #filePath, line: UInt = #line) {
        for (i, step) in steps.enumerated() {
            let done = actions(l.apply(step.0))
            XCTAssertEqual(state(l), step.1, "step \(i)", file: file, line: line)
            XCTAssertEqual(done, step.2, "step \(i)", file: file, line: line)
        }
    }

    /// The way to playing, and a network thread late for a play already replaced.
    func testPlayConnectsJoinsAndPlays() {
        var l = Life()
        assertSteps(&l, [
            (.play, "wanted", []),
            (.connected(a, generation: 0), "wanted", ["cancel a"]),  // made for an older play
            (.connected(a, generation: 1), "connecting a", ["show connecting"]),
            (.heard(a), "connecting a", []),  // not before the decoder has it
            (.decoding(a), "joining a", ["show buffering"]),
            (.decoding(b), "joining a", []),
            (.heard(a), "playing a", ["show playing"]),
            (.play, "wanted", ["cancel a"]),  // a Play while playing connects again at the live edge
        ])
    }

    /// A pause while heard keeps the connection warm; a second pause does not extend it; Play
    /// resumes it; its time runs out only at its end; a new keep_warm times it from the pause.
    func testAPauseKeepsItWarmAndPlayResumes() {
        var l = Life()
        _ = run(&l, [.play, .connected(a, generation: 1), .decoding(a), .heard(a)])
        assertSteps(&l, [
            (.pause(keepWarmMs: 30_000, at: 1000), "warm a 1000–31000", ["wake", "log info", "show paused"]),
            (.pause(keepWarmMs: 30_000, at: 5000), "warm a 1000–31000", []),
            (.keepWarm(ms: 10_000), "warm a 1000–11000", ["wake"]),
            (.warmExpired(a, at: 10_999), "warm a 1000–11000", []),
            (.play, "joining a", ["show buffering", "wake"]),
            (.heard(a), "playing a", ["show playing"]),
            (.pause(keepWarmMs: 30_000, at: 20_000), "warm a 20000–50000", ["wake", "log info", "show paused"]),
            (.warmExpired(b, at: 60_000), "warm a 20000–50000", []),
            (.warmExpired(a, at: 50_000), "idle", ["cancel a", "log info"]),
            (.play, "wanted", []),
        ])
    }

    /// Only what is heard is kept warm; with keep_warm = 0, nothing is; stop and endWarm let go.
    func testWhatIsNotHeardIsNotKeptWarm() {
        var joining = Life()
        _ = run(&joining, [.play, .connected(a, generation: 1), .decoding(a)])
        assertSteps(&joining, [(.pause(keepWarmMs: 30_000, at: 0), "idle", ["cancel a", "show paused"])])
        var cold = Life()
        _ = run(&cold, [.play, .connected(a, generation: 1), .decoding(a), .heard(a)])
        assertSteps(&cold, [(.pause(keepWarmMs: 0, at: 0), "idle", ["cancel a", "show paused"])])
        var warm = Life()
        _ = run(&warm, [.play, .connected(a, generation: 1), .decoding(a), .heard(a), .pause(keepWarmMs: 1000, at: 0)])
        assertSteps(&warm, [(.endWarm, "idle", ["cancel a"]), (.endWarm, "idle", [])])
        _ = run(&warm, [.play, .connected(b, generation: 3), .decoding(b), .heard(b), .pause(keepWarmMs: 1000, at: 0)])
        assertSteps(&warm, [(.stop, "idle", ["cancel b", "show stopped"])])
    }

    /// A transfer that ends waits before the next; a stale end changes nothing; a warm one that
    /// ends is let go quietly; `retry` ends the wait.
    func testAnEndBacksOffAndRetries() {
        var l = Life()
        _ = run(&l, [.play, .connected(a, generation: 1), .decoding(a), .heard(a)])
        let reconnecting = StreamStatus.reconnecting(inMs: 500, reason: "gone")
        assertSteps(&l, [
            (.ended(b, next: reconnecting, retryAt: 900), "playing a", []),
            (.ended(a, next: reconnecting, retryAt: 900), "backing off until 900", ["show reconnecting in 0.5 s: gone"]),
            (.retry, "wanted", []),
            (.connected(b, generation: 1), "connecting b", ["show connecting"]),
            (.ended(b, next: .failed(reason: FailureReason("no"), retryInMs: 30_000), retryAt: 40_000), "failed until 40000",
             ["show failed: no (retrying in 30 s)"]),
            (.retry, "wanted", []),
        ])
        var warm = Life()
        _ = run(&warm, [.play, .connected(a, generation: 1), .decoding(a), .heard(a), .pause(keepWarmMs: 1000, at: 0)])
        assertSteps(&warm, [(.ended(a, next: reconnecting, retryAt: 900), "idle", [])])
    }

    /// A switch lines up while the old connection plays; taken, the old one is followed by the
    /// network thread and let go; a pause or a newer switch drops one under way.
    func testASwitchTakesOverOrIsDropped() {
        let attempt = SwitchAttempt(connection: b, config: StreamConfig(url: "b"), requested: 0)
        var l = Life()
        _ = run(&l, [.play, .connected(a, generation: 1), .decoding(a), .heard(a)])
        assertSteps(&l, [
            (.switchStarted(attempt), "switching a→b", []),
            (.switchTaken(from: b, attempt), "switching a→b", []),
            (.switchTaken(from: a, attempt), "playing b", ["follow a→b", "cancel a"]),
            (.decoding(b), "joining b", ["show buffering"]),  // played afresh: it joins
        ])
        var paused = Life()
        _ = run(&paused, [.play, .connected(a, generation: 1), .decoding(a), .heard(a), .switchStarted(attempt)])
        assertSteps(&paused, [(.pause(keepWarmMs: 1000, at: 0), "warm a 0–1000", ["cancel b", "wake", "log info", "show paused"])])
        var idle = Life()
        assertSteps(&idle, [(.switchStarted(attempt), "idle", ["cancel b"])])
    }

    /// The sound output went away: this computer pauses, with the reason.
    func testALostOutputPauses() {
        var l = Life()
        _ = run(&l, [.play, .connected(a, generation: 1), .decoding(a), .heard(a)])
        assertSteps(&l, [
            (.outputLost(b, reason: "unplugged"), "playing a", []),
            (.outputLost(a, reason: "unplugged"), "idle", ["log warning", "cancel a", "show paused: unplugged"]),
            (.connected(a, generation: 1), "idle", ["cancel a"]),
        ])
        XCTAssertEqual(l.generation, 2)
    }
}
