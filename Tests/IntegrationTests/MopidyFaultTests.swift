import Foundation
import Mopidy
import Net
import Support
import Synchronization
import XCTest

/// The Mopidy client against a misbehaving server (Tests/Fixtures/fake_mopidy.py): every bad
/// reply is a typed error naming the server, and the event stream survives bad sockets.
final class MopidyFaultTests: XCTestCase {
    nonisolated(unsafe) static var server: Process?
    nonisolated(unsafe) static var port = 0
    var base: String { "http://127.0.0.1:\(Self.port)" }

    override class func tearDown() {
        server?.terminate()
        server?.waitUntilExit()
        server = nil
    }

    override func setUpWithError() throws {
        if Self.server == nil {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            p.arguments = ["python3", Rig.projectRoot.appendingPathComponent("Tests/Fixtures/fake_mopidy.py").path]
            let out = Pipe()
            p.standardOutput = out
            p.standardError = FileHandle.nullDevice
            try p.run()
            Self.port = Int(LineReader(out.fileHandleForReading).readLine(timeout: 10) ?? "") ?? 0
            Self.server = p
        }
        XCTAssertGreaterThan(Self.port, 0)
    }

    func client(_ mode: String, totalMs: Int = 5000) -> MopidyClient {
        MopidyClient(endpoints: MopidyEndpoints(rpcURL: "\(base)/rpc/\(mode)", wsURL: ""),
                     timeouts: HTTPTimeouts(connectMs: 1000, totalMs: totalMs))
    }

    func error(_ mode: String, totalMs: Int = 5000) -> MopidyError? {
        do { _ = try client(mode, totalMs: totalMs).version(); return nil } catch { return error }
    }

    func testEveryBadReplyIsATypedErrorNamingTheServer() throws {
        XCTAssertEqual(try client("ok").version(), "3.4.1")
        guard case .httpStatus(let url, 502, let snippet)? = error("html502") else { return XCTFail("\(String(describing: error("html502")))") }
        XCTAssertTrue(url.hasSuffix("/rpc/html502"))
        XCTAssertTrue(snippet.contains("502 Bad Gateway"), snippet)
        guard case .badReply(_, let why)? = error("notjson") else { return XCTFail() }
        XCTAssertTrue(why.contains("invalid JSON") && why.contains("text/plain") && why.contains("Mopidy is starting"), why)
        guard case .rpc(_, "core.get_version", -32601, let msg)? = error("error") else { return XCTFail() }
        XCTAssertEqual(msg, "Method not found: no such method")
        guard case .badReply(_, let idWhy)? = error("wrongid") else { return XCTFail() }
        XCTAssertTrue(idWhy.contains("does not match"), idWhy)
        guard case .badReply(_, let huge)? = error("huge") else { return XCTFail() }
        XCTAssertTrue(huge.contains("larger than"), huge)
        guard case .badReply(_, let utf)? = error("badutf8") else { return XCTFail() }
        XCTAssertTrue(utf.contains("UTF-8"), utf)
        let t0 = monotonicMs()
        guard case .unreachable(_, let slow)? = error("slow", totalMs: 1000) else { return XCTFail() }
        XCTAssertLessThan(monotonicMs() - t0, 3000, "request timeout not applied")
        XCTAssertTrue(slow.lowercased().contains("timeout") || slow.lowercased().contains("timed out"), slow)
        // A result of null where a track is expected: nothing is playing, not an error.
        XCTAssertNil(try client("nullresult").currentTlTrack())
    }

    func testCoverArtFaultsLeaveNoBrokenFile() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("groove-art-faults-\(getpid())")
        defer { try? FileManager.default.removeItem(at: dir) }
        let cache = ArtCache(directory: dir.path, maxImageBytes: 5 << 20, timeouts: HTTPTimeouts(connectMs: 1000, totalMs: 2000))
        XCTAssertTrue(try cache.localURI(for: "/art/ok", base: base).hasPrefix("file://"))
        for (mode, expect) in [("404", "HTTP 404"), ("html", "not an image"), ("huge", "larger than"), ("endless", "imed out")] {
            let t0 = monotonicMs()
            XCTAssertThrowsError(try cache.localURI(for: "/art/\(mode)", base: base), mode) {
                XCTAssertTrue("\($0)".contains(expect), "\(mode): \($0)")
            }
            XCTAssertLessThan(monotonicMs() - t0, 4000, "\(mode) took too long")
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        XCTAssertEqual(files.count, 1, "partial or broken files left: \(files)")
    }

    func stream(_ mode: String, collector: EventCollector) -> MopidyEventStream {
        MopidyEventStream(url: "ws://127.0.0.1:\(Self.port)/ws/\(mode)", delegate: collector, messageLimit: 1 << 20,
                          connectTimeoutMs: 1000)
    }

    func connections(_ mode: String) throws -> Int {
        let r = try HTTPClient().get("\(base)/count/ws/\(mode)", limit: 100)
        return Int(String(decoding: r.body, as: UTF8.self)) ?? -1
    }

    func testEventsSurviveFragmentsPingFloodsBinaryAndBadJSON() throws {
        for mode in ["fragmented", "pingflood", "binary", "invalidjson"] {
            let c = EventCollector()
            let s = stream(mode, collector: c)
            s.start()
            defer { s.stop() }
            XCTAssertTrue(waitUntil(5) { c.events.contains(.volumeChanged(42)) }, "\(mode): event not delivered")
            XCTAssertEqual(c.events.filter { $0 == .volumeChanged(42) }.count, 1, mode)
        }
    }

    func testBrokenSocketsReconnectOnTheScheduleNotInAHotLoop() throws {
        for mode in ["garbage", "oversize", "badaccept", "close", "nohandshake"] {
            let c = EventCollector()
            let s = stream(mode, collector: c)
            let before = try connections(mode)
            s.start()
            usleep(4_000_000)
            s.stop()
            let attempts = try connections(mode) - before
            // The home schedule (0.25 s, then every 0.5 s): what it allows in 4 s, never hundreds.
            let allowed = RetrySchedule.home.attempts(inFirstMs: 4000)
            XCTAssertGreaterThanOrEqual(attempts, mode == "nohandshake" ? 1 : 2, "\(mode): no retry")
            XCTAssertLessThanOrEqual(attempts, allowed, "\(mode): \(attempts) connections in 4 s")
            XCTAssertTrue(c.events.isEmpty, "\(mode): events from a broken socket")
        }
    }
}
