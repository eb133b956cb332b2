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

    func testUserinfoHoldingColonsAndEscapedAtSigns() throws {
        let u = try XCTUnwrap(URLParts.parse("https://listener:p%40ss:w0rd@music.local:8443/a"))
        XCTAssertEqual(u.userinfo, "listener:p%40ss:w0rd")
        XCTAssertEqual(u.host, "music.local")
        XCTAssertEqual(u.port, 8443)
        XCTAssertEqual(u.authority, "listener:p%40ss:w0rd@music.local:8443")
        XCTAssertEqual(URLParts.parse("http://@h/")?.userinfo, "")
        XCTAssertEqual(URLParts.parse("http://:pw@h/")?.userinfo, ":pw")
    }

    /// Where a parser of its own read URLs otherwise than libcurl, which makes the connection:
    /// each of these was accepted with other parts, or refused, by the hand-written parser.
    func testURLsAreReadAsLibcurlReadsThem() throws {
        // An '@' in a password ends the userinfo at the first '@' for libcurl: the hand parser
        // took the last one and saw the host music.local, while libcurl refused the URL.
        XCTAssertNil(URLParts.parse("https://listener:p@ss:w0rd@music.local:8443/a"))
        XCTAssertNil(URLParts.parse("http://a@b@c/"))
        // Other spellings of the loopback address are the loopback address (PlainPasswordTests
        // counts on hostIsLoopback).
        for text in ["http://127.1/", "http://0x7f.0.0.1/", "http://%6c%6fcalhost/", "http://[0:0::1]/"] {
            let u = try XCTUnwrap(URLParts.parse(text), text)
            XCTAssertTrue(u.hostIsLoopback, "\(text) → \(u.host)")
        }
        XCTAssertEqual(URLParts.parse("http://127.1:8000/")?.host, "127.0.0.1")
        // Leading zeros of a port, as many as written.
        XCTAssertEqual(URLParts.parse("http://h:000000000080/")?.port, 80)
        // Dot segments are resolved as libcurl requests them; other escapes are kept.
        XCTAssertEqual(URLParts.parse("http://h/a/../stream.flac")?.pathAndQuery, "/stream.flac")
        XCTAssertEqual(URLParts.parse("http://h/caf%C3%A9?q=%20")?.pathAndQuery, "/caf%C3%A9?q=%20")
        // An IPv6 literal's zone, kept escaped as in the URL.
        XCTAssertEqual(URLParts.parse("ws://[fe80::1%25eth0]:6680/ws")?.hostPort, "[fe80::1%25eth0]:6680")
        // Three slashes: libcurl takes what follows as the host.
        XCTAssertEqual(URLParts.parse("http:///path")?.host, "path")
        // Not a URL for libcurl either.
        for text in ["http://h:8000:9/", "http://h\\evil/", "http://h/a\u{0}b", "http://[::1]:65536/"] {
            XCTAssertNil(URLParts.parse(text), text)
        }
    }

    func testQueryWithoutPath() throws {
        let u = try XCTUnwrap(URLParts.parse("ws://h:8180?token=1"))
        XCTAssertEqual(u.host, "h")
        XCTAssertEqual(u.pathAndQuery, "/?token=1", "libcurl's normal form: a path of at least /")
        XCTAssertEqual(u.requestTarget, "/?token=1")
    }

    func testFragmentIsDropped() throws {
        let u = try XCTUnwrap(URLParts.parse("http://h/a?b=1#part"))
        XCTAssertEqual(u.pathAndQuery, "/a?b=1")
        XCTAssertEqual(u.text, "http://h/a?b=1")
        XCTAssertEqual(URLParts.parse("http://h#x")?.pathAndQuery, "/")
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
                     "http://", "http://user@/", "http://h:port/", "http://h:65536/",
                     "http://h:-1/", "http://[::1/", "http://[::1]x/", "http://[]/", "http://[host]/",
                     "http://::1/", "http://h x/", "http://h/a b", "http://h/\t", "http://h]/"] {
            XCTAssertNil(URLParts.parse(text), text)
        }
    }

    func testRedactedURLRemovesOnlyTheUserinfo() {
        XCTAssertEqual(redactedURL("http://listener:p%40ss@127.0.0.1:18000/stream.flac"), "http://127.0.0.1:18000/stream.flac")
        XCTAssertEqual(redactedURL("http://listener:p@ss@127.0.0.1:18000/stream.flac"), "(a URL that does not parse)")
        XCTAssertEqual(redactedURL("http://u:pw@[::1]:8000?x=1"), "http://[::1]:8000/?x=1")
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
