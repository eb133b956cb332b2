@testable import Bridge
import XCTest

/// How `groove-bridge login` edits a configuration file.
final class ConfigFileTests: XCTestCase {
    func testLoginEditsTheFileKeepingTheUsersLines() {
        let text = """
            # my server
            host = old.local
            password = hunter2
            notify = true
            host = older.local
              password_command = pass show groove
            """
        let edited = ConfigFile.edited(text, set: [("host", "musicbox.local"), ("user", "ada")],
                                       commentOut: ["password", "password_command"], why: "kept elsewhere")
        XCTAssertEqual(edited, """
            # my server
            host = musicbox.local
            # password = …  (kept elsewhere)
            notify = true
            # password_command = …  (kept elsewhere)
            user = ada

            """)
        XCTAssertFalse(edited.contains("hunter2"))
        XCTAssertEqual(ConfigFile.edited("", set: [("user", "listener")], commentOut: [], why: ""), "user = listener\n")
        // What it writes parses back to what is set.
        XCTAssertEqual(try Config.parse(edited, path: "f", passwordAllowed: true).host, "musicbox.local")
    }
}
