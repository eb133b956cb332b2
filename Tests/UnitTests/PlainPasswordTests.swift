import Bridge
import Net
import XCTest

/// The stream's password in the clear over plain http is worth one warning, when it leaves this
/// computer.
final class PlainPasswordTests: XCTestCase {
    func warning(_ url: String, password: String? = "pw") -> String? {
        var c = Config()
        c.streamURL = url
        c.password = password
        return c.unencryptedPasswordWarning
    }

    func testOnlyPlainHTTPToAnotherComputerWithAPasswordWarns() {
        XCTAssertEqual(warning("http://musicbox.local:8000/stream.flac"),
                       "the password crosses the network unencrypted: use https (stream_url http://musicbox.local:8000/stream.flac)")
        XCTAssertNotNil(warning("http://192.0.2.20:8000/stream.flac"))
        XCTAssertNotNil(warning("HTTP://[2001:db8::1]:8000/s"))
        XCTAssertNotNil(warning("http://127.example.org/s"))
        XCTAssertNil(warning("https://musicbox.local/stream.flac"))
        XCTAssertNil(warning("http://musicbox.local/stream.flac", password: nil))
        for local in ["http://127.0.0.1:8000/s", "http://127.8.9.10/s", "http://[::1]:8000/s", "http://localhost/s",
                      "http://LOCALHOST./s", "http://groove.localhost/s", "http://[::ffff:127.0.0.1]/s"] {
            XCTAssertNil(warning(local), local)
        }
        var c = Config()
        c.host = "musicbox"
        c.password = "pw"
        XCTAssertNotNil(c.unencryptedPasswordWarning, "the stream URL made from host is plain http")
    }

    func testLoopbackHosts() {
        func loop(_ url: String) -> Bool { URLParts.parse(url)!.hostIsLoopback }
        XCTAssertTrue(loop("http://127.0.0.1"))
        XCTAssertTrue(loop("http://[0:0:0:0:0:0:0:1]/"))
        XCTAssertFalse(loop("http://128.0.0.1"))
        XCTAssertFalse(loop("http://[::2]/"))
        XCTAssertFalse(loop("http://localhost.example/"))
    }
}
