import Mopidy
import Support
import XCTest

/// Server text printed by `status` and in log lines: shown, never acting on the terminal.
final class TerminalTextTests: XCTestCase {
    func testControlCharactersAreShownEscaped() {
        XCTAssertEqual(terminalSafe("Café Ñandú – 東京 🎵"), "Café Ñandú – 東京 🎵")
        XCTAssertEqual(terminalSafe("\u{1B}]0;pwned\u{07}\u{1B}[2JTitle"), "\\x1B]0;pwned\\x07\\x1B[2JTitle")
        XCTAssertEqual(terminalSafe("a\nb\rc\td\u{7F}e\u{9B}f\u{0}"), "a\\nb\\rc\\td\\x7Fe\\x9Bf\\x00")
        XCTAssertEqual(terminalSafe("abc\u{202E}fed"), "abc\\u{202E}fed")
    }

    func testStatusJSONEscapesWhatATerminalWouldAct() {
        let o = JSON.object(["title": .string("\u{1B}[31mred\u{7F}\u{85}\u{2066}")])
        XCTAssertEqual(o.serialized(), #"{"title":"\u001b[31mred\u007f\u0085\u2066"}"#)
        XCTAssertEqual(try JSON.parse(o.serialized()), o)
    }

    func testALogLineIsOneLineWhateverItCarries() {
        let lines = loggedLines { Log.warning("now playing: x\ngroove-bridge: [error] forged\u{1B}[2J") }
        XCTAssertEqual(lines, ["groove-bridge: [warning] now playing: x\\ngroove-bridge: [error] forged\\x1B[2J\n"])
    }
}
