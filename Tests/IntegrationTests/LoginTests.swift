import Bridge
import DBus
import Foundation
import XCTest

/// `groove-bridge login` against the rig: a working password is checked, stored and used by the
/// running bridge; a wrong one is refused with what failed, and nothing is stored.
final class LoginTests: KeyringTestCase {
    func testLoginStoresAWorkingPasswordAndRefusesAWrongOne() throws {
        // A bridge running with no password anywhere: the stream refuses it.
        try startBridge(rigURLs)
        XCTAssertTrue(waitUntil(10) { (status()["stream"] as? String ?? "").contains("refused the password") }, "\(status())")

        let wrong = try login(rigURLs, password: "not-the-password")
        XCTAssertEqual(wrong.status, 1, wrong.out + wrong.err)
        XCTAssertTrue(wrong.err.contains("login: the stream at \(rig.info.stream_url) refused the password for user 'listener' (HTTP 401); nothing is stored"),
                      wrong.err)
        XCTAssertFalse((wrong.out + wrong.err).contains("not-the-password"))
        XCTAssertNil(try keyring.lookup(user: "listener"), "a refused password is in the keyring")
        XCTAssertFalse(FileManager.default.fileExists(atPath: configFile.path), "a refused login wrote the configuration")

        let right = try login(rigURLs, password: rig.info.password)
        XCTAssertEqual(right.status, 0, right.out + right.err)
        for line in ["takes the password (Ogg FLAC)", "answers at \(rig.info.groove_rpc_url)",
                     "the password is in the keyring (service groove-audio, user listener)",
                     "configuration written to \(configFile.path)", "(pid \(bridge!.processIdentifier)) reloads its configuration"] {
            XCTAssertTrue(right.out.contains(line), "\(line) not in: \(right.out)")
        }
        XCTAssertFalse((right.out + right.err).contains(rig.info.password), "login printed the password")
        XCTAssertEqual(try keyring.lookup(user: "listener"), rig.info.password)
        let text = try String(contentsOf: configFile, encoding: .utf8)
        XCTAssertEqual(text, "stream_url = \(rig.info.stream_url)\nrpc_url = \(rig.info.groove_rpc_url)\nws_url = \(rig.info.groove_ws_url)\nuser = listener\n")
        let mode = try FileManager.default.attributesOfItem(atPath: configFile.path)[.posixPermissions] as? Int
        XCTAssertEqual(mode, 0o600)

        // The running bridge reloaded: it plays with the keyring's password, and says so.
        XCTAssertTrue(waitUntil(10) { status()["stream"] as? String == "playing" }, "\(status())")
        XCTAssertEqual(status()["password_source"] as? String, "keyring")
        XCTAssertNil(status()["sign_in"])
        let log = stopBridge()
        XCTAssertFalse(log.contains(rig.info.password))

        // A new bridge from the written configuration alone.
        try startBridge([])
        XCTAssertTrue(waitUntil(10) { status()["stream"] as? String == "playing" }, "\(status())")
    }

    /// No Secret Service: the password goes into the configuration file (0600), and login says so.
    func testWithoutAKeyringThePasswordGoesToTheFileAndLoginSaysSo() throws {
        try FileManager.default.createDirectory(at: configFile.deletingLastPathComponent(), withIntermediateDirectories: true)
        try "# mine\npassword_command = pass show groove\nnotify = true\n".write(to: configFile, atomically: true, encoding: .utf8)
        let r = try login(rigURLs + ["--user", "listener"], password: rig.info.password,
                          env: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=\(keyring.dir.path)/no-bus"])
        XCTAssertEqual(r.status, 0, r.out + r.err)
        XCTAssertTrue(r.out.contains("no keyring to keep the password in"), r.out)
        XCTAssertTrue(r.out.contains("it is written to \(configFile.path), which only you can read (mode 600)"), r.out)
        XCTAssertTrue(r.out.contains("no session bus, so no running groove-bridge to reload"), r.out)
        let text = try String(contentsOf: configFile, encoding: .utf8)
        XCTAssertEqual(text, "# mine\n# password_command = …  (groove-bridge login: the password is kept elsewhere)\nnotify = true\n"
                       + "stream_url = \(rig.info.stream_url)\nrpc_url = \(rig.info.groove_rpc_url)\nws_url = \(rig.info.groove_ws_url)\n"
                       + "user = listener\npassword = \(rig.info.password)\n")
        let mode = try FileManager.default.attributesOfItem(atPath: configFile.path)[.posixPermissions] as? Int
        XCTAssertEqual(mode, 0o600)
        try startBridge([])
        XCTAssertTrue(waitUntil(10) { status()["stream"] as? String == "playing" }, "\(status())")
        XCTAssertEqual(status()["password_source"] as? String, "password")
    }

    /// At a terminal: the questions, the password never echoed, a wrong one asked again.
    func testAtATerminalThePasswordIsNotEchoedAndAskedAgain() throws {
        let terminal = Rig.projectRoot.appendingPathComponent("Tests/Fixtures/at_a_terminal.py").path
        let prompt = "Password for listener@127.0.0.1: "
        let r = try runCommand(["python3", terminal, "20", "User [listener]: ", "", prompt, "typed-wrong", prompt, rig.info.password,
                                "--", DaemonTestCase.binary.path, "login"] + rigURLs, env: environment, timeout: 30)
        XCTAssertEqual(r.status, 0, r.out + r.err)
        XCTAssertTrue(r.out.contains("refused the password for user 'listener' (HTTP 401); try again"), r.out)
        XCTAssertTrue(r.out.contains("configuration written"), r.out)
        XCTAssertFalse(r.out.contains(rig.info.password), "the password shows on the terminal: \(r.out)")
        XCTAssertFalse(r.out.contains("typed-wrong"), "the password shows on the terminal: \(r.out)")
        XCTAssertEqual(try keyring.lookup(user: "listener"), rig.info.password)
    }

    /// No server configured: the host is asked for, and what is typed is checked like the file's.
    func testAtATerminalTheHostIsAskedWhenNoneIsConfigured() throws {
        let terminal = Rig.projectRoot.appendingPathComponent("Tests/Fixtures/at_a_terminal.py").path
        let r = try runCommand(["python3", terminal, "20", "Groove Audio server (host name or address): ", "http://musicbox/",
                                "--", DaemonTestCase.binary.path, "login"], env: environment, timeout: 30)
        XCTAssertEqual(r.status, 1, r.out)
        XCTAssertTrue(r.out.contains("host: 'http://musicbox/' is a host name or address, not a URL"), r.out)
        XCTAssertFalse(FileManager.default.fileExists(atPath: configFile.path))
        let scripted = try login([], password: "x")
        XCTAssertEqual(scripted.status, 2, scripted.err)
        XCTAssertTrue(scripted.err.contains("login: no server configured: give --host HOST"), scripted.err)
    }
}
