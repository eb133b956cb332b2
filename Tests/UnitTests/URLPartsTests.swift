import Mopidy
import Net
import XCTest

final class URLPartsTests: XCTestCase {
    func testIPv6LiteralWithPort() throws {
        let u = try XCTUnwrap(URLParts.parse("http://[::1]:8000/stream.flac"))
        XCTAssertEqual(u, URLParts(scheme: "http", host: "::1", port: 8000, pathAndQuery: "/stream.flac"))
        XCTAssertEqual(u.hostPort, "[::1]:8000")
        XCTAssertEqual(u.text, "http://[::1]:8000/stream.flac")
        XCTAssertEqual(URLParts.parse("ws://[fe80::1%25eth0]/ws")?.host, "fe80::1%25eth0")
    }

    func testUserinfoHoldingAtSignsAndColons() throws {
        let u = try XCTUnwrap(URLParts.parse("https://listener:p@ss:w0rd@music.local:8443/a"))
        XCTAssertEqual(u.userinfo, "listener:p@ss:w0rd")
        XCTAssertEqual(u.host, "music.local")
        XCTAssertEqual(u.port, 8443)
        XCTAssertEqual(u.authority, "listener:p@ss:w0rd@music.local:8443")
        XCTAssertEqual(URLParts.parse("http://@h/")?.userinfo, "")
    }

    func testQueryWithoutPath() throws {
        let u = try XCTUnwrap(URLParts.parse("ws://h:8180?token=1"))
        XCTAssertEqual(u.host, "h")
        XCTAssertEqual(u.pathAndQuery, "?token=1")
        XCTAssertEqual(u.requestTarget, "/?token=1")
    }

    func testFragmentIsDropped() throws {
        let u = try XCTUnwrap(URLParts.parse("http://h/a?b=1#part"))
        XCTAssertEqual(u.pathAndQuery, "/a?b=1")
        XCTAssertEqual(u.text, "http://h/a?b=1")
        XCTAssertEqual(URLParts.parse("http://h#x")?.pathAndQuery, "")
    }

    func testNoPath() throws {
        let u = try XCTUnwrap(URLParts.parse("http://h"))
        XCTAssertEqual(u, URLParts(scheme: "http", host: "h"))
        XCTAssertEqual(u.requestTarget, "/")
        XCTAssertNil(URLParts.parse("http://h:/x")?.port, "an empty port is the default port")
    }

    func testSchemeIsCaseInsensitiveTheRestKeptAsWritten() throws {
        let u = try XCTUnwrap(URLParts.parse("HTTPS://Music.Local:443/Stream.FLAC"))
        XCTAssertEqual(u.scheme, "https")
        XCTAssertEqual(u.host, "Music.Local")
        XCTAssertEqual(u.pathAndQuery, "/Stream.FLAC")
    }

    func testGarbageIsRefused() {
        for text in ["", "not a url", "musicbox.local:8000/stream.flac", "://h/", "1http://h/", "ht tp://h/",
                     "http://", "http:///path", "http://user@/", "http://h:port/", "http://h:65536/",
                     "http://h:-1/", "http://[::1/", "http://[::1]x/", "http://[]/", "http://[host]/",
                     "http://::1/", "http://h x/", "http://h/a b", "http://h/\t", "http://h]/"] {
            XCTAssertNil(URLParts.parse(text), text)
        }
    }

    func testRedactedURLRemovesOnlyTheUserinfo() {
        XCTAssertEqual(redactedURL("http://listener:p@ss@127.0.0.1:18000/stream.flac"), "http://127.0.0.1:18000/stream.flac")
        XCTAssertEqual(redactedURL("http://u:pw@[::1]:8000?x=1"), "http://[::1]:8000?x=1")
        XCTAssertEqual(redactedURL("http://127.0.0.1:18000/stream.flac#t"), "http://127.0.0.1:18000/stream.flac#t")
        XCTAssertEqual(redactedURL("not a url"), "not a url")
        XCTAssertFalse(redactedURL("http://user:hunter2@/x").contains("hunter2"))
        XCTAssertFalse(redactedURL("http://user:hunter2@h:port/").contains("hunter2"))
    }

    func testMopidyHTTPBaseAndBrackets() {
        XCTAssertEqual(MopidyEndpoints(rpcURL: "http://u:p@[::1]:8180/api/mopidy/rpc", wsURL: "").httpBase, "http://u:p@[::1]:8180")
        XCTAssertEqual(MopidyEndpoints(rpcURL: "http://h:6680?x", wsURL: "").httpBase, "http://h:6680")
        XCTAssertEqual(MopidyEndpoints(rpcURL: "nonsense", wsURL: "").httpBase, "nonsense")
        XCTAssertEqual(MopidyEndpoints.groove(host: "::1").rpcURL, "http://[::1]:8180/api/mopidy/rpc")
        XCTAssertEqual(bracketed("::1"), "[::1]")
        XCTAssertEqual(bracketed("[::1]"), "[::1]")
        XCTAssertEqual(bracketed("musicbox.local"), "musicbox.local")
    }
}
