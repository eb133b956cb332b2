@testable import Bridge
import XCTest

/// Where the password comes from, in order.
final class PasswordOrderTests: XCTestCase {
    func testTheKeyringIsAskedOnlyWhenNothingElseGivesAPassword() throws {
        final class Asked: @unchecked Sendable { var users: [String] = [] }
        let asked = Asked()
        func resolve(_ c: Config, env: [String: String] = [:], keyring: Keyring.Lookup = .found("from-keyring")) throws -> Config {
            var c = c
            try ConfigLoader.resolvePassword(&c, environment: env, keyring: { asked.users.append($0); return keyring })
            return c
        }
        var file = Config()
        file.password = "from-file"
        var command = Config()
        command.passwordCommand = "echo from-command"
        command.password = "from-file"
        let table: [(Config, [String: String], String?, PasswordSource)] = [
            (command, ["GROOVE_PASSWORD": "from-env"], "from-env", .environment),
            (command, [:], "from-command", .command),
            (file, [:], "from-file", .file),
            (file, ["GROOVE_PASSWORD": ""], "from-file", .file),
        ]
        for (c, env, password, source) in table {
            let r = try resolve(c, env: env)
            XCTAssertEqual(r.password, password)
            XCTAssertEqual(r.passwordSource, source)
        }
        XCTAssertEqual(asked.users, [], "the keyring is asked although a password is given")

        var ada = Config()
        ada.user = "ada"
        XCTAssertEqual(try resolve(ada).password, "from-keyring")
        XCTAssertEqual(try resolve(ada).passwordSource, .keyring)
        XCTAssertEqual(asked.users.last, "ada")
        let locked = try resolve(ada, keyring: .locked)
        XCTAssertNil(locked.password)
        XCTAssertEqual(locked.passwordSource, .keyringLocked)
        for lookup in [Keyring.Lookup.notFound, .unavailable("no bus")] {
            let r = try resolve(ada, keyring: lookup)
            XCTAssertNil(r.password)
            XCTAssertEqual(r.passwordSource, .none)
        }
    }
}
