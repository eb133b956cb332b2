@testable import Bridge
import Foundation
import Support
import XCTest

/// Secrets stay out of URLs, logs and core files.
final class SecretTests: XCTestCase {
    func testCredentialsInsideURLsAreRefusedWithoutBeingQuoted() {
        let cases: [(String, String)] = [
            ("stream_url", "http://listener:s3cr3t@musicbox:8000/stream.flac"),
            ("rpc_url", "https://me:s3cr3t@musicbox/api/mopidy/rpc"),
            ("ws_url", "ws://s3cr3t@[::1]:8180/ws/mopidy"),
            ("host", "listener:s3cr3t@musicbox"),
            ("host", "http://listener:s3cr3t@musicbox/"),
        ]
        for (key, value) in cases {
            var c = Config()
            XCTAssertThrowsError(try c.set(key, value, origin: "f:3"), "\(key) = \(value)") {
                let message = ($0 as? ConfigError)?.message ?? ""
                XCTAssertTrue(message.hasPrefix("f:3: \(key): a user or password inside the URL is refused"), message)
                XCTAssertTrue(message.contains("'user'") && message.contains("'password_command'"), message)
                XCTAssertFalse(message.contains("s3cr3t"), message)
            }
        }
        // Not a URL this program takes: said without the credentials it carries.
        var c = Config()
        XCTAssertThrowsError(try c.set("stream_url", "ftp://me:s3cr3t@h/x", origin: "f:3")) {
            XCTAssertEqual(($0 as? ConfigError)?.message, "f:3: stream_url: 'ftp://h/x' is not an http(s):// or ws(s):// URL")
        }
        XCTAssertNoThrow(try c.set("stream_url", "http://musicbox:8000/stream.flac?user=me", origin: "f:3"))
    }

    func testTheScrubberHidesTheCredentialsOfAnyURL() {
        let cases: [(String, String)] = [
            ("redirected to http://u:pw@evil.example/x then", "redirected to http://***@evil.example/x then"),
            ("a https://u:p%40ss@h:8000 and wss://x@[::1]/ws", "a https://***@h:8000 and wss://***@[::1]/ws"),
            ("\"http://u:p@h?q=1\"", "\"http://***@h?q=1\""),
            ("mail me@example.org at http://h/a@b", "mail me@example.org at http://h/a@b"),
            ("no URL here: user@host", "no URL here: user@host"),
            ("http://:@h", "http://***@h"),
        ]
        for (text, shown) in cases { XCTAssertEqual(Log.scrub(text), shown, text) }
    }

    func testEverySecretIsScrubbedWhateverItsLength() {
        // Secrets stay registered for the whole test process: none that other tests' lines hold.
        Log.addSecret("¤")
        Log.addSecret("")
        Log.addSecret("zébra")
        Log.addSecret("zébra-crossing")
        XCTAssertEqual(Log.scrub("a ¤uiet zébra-crossing"), "a ***uiet ***")
        XCTAssertEqual(Log.scrub("zébras"), "***s")
        XCTAssertEqual(Log.scrub("nothing secret"), "nothing secret")
    }

    /// The scrubber matches bytes: a secret that is another's start with as many characters (a
    /// flag's first half, a letter before its combining accent) must not leave that one's rest,
    /// and a secret followed by a combining mark is still found.
    func testASecretInsideAnotherOfAsManyCharactersLeavesNothing() {
        Log.addSecret("q🇺")
        Log.addSecret("q🇺🇸")
        Log.addSecret("kéy\u{301}")
        Log.addSecret("kéy")
        XCTAssertEqual(Log.scrub("<q🇺🇸>"), "<***>")
        XCTAssertEqual(Log.scrub("<kéy\u{301}>"), "<***>")
        XCTAssertEqual(Log.scrub("<kéy\u{302}>"), "<***\u{302}>")
    }

    func testTheUnitAllowsNoCoreFile() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let unit = try String(contentsOf: root.appendingPathComponent("desktop/groove-bridge.service.in"), encoding: .utf8)
        let service = try XCTUnwrap(unit.components(separatedBy: "[Service]\n").dropFirst().first)
            .components(separatedBy: "\n[").first ?? ""
        XCTAssertTrue(service.split(separator: "\n").contains("LimitCORE=0"), service)
    }
}
