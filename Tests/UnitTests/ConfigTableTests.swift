@testable import Bridge
import Foundation
import Audio
import XCTest

/// `ConfigKey.all` is the one list of configuration keys: these hold the parser, the defaults,
/// `description` and the key table of doc/configuration.md to it.
final class ConfigTableTests: XCTestCase {
    /// doc/configuration.md's `| key | default | meaning |` table under "## Configuration": each key
    /// (a row may name several) with its default cell, backticks removed.
    func readmeTable() throws -> [(key: String, defaultCell: String)] {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("doc/configuration.md"), encoding: .utf8)
        let section = try XCTUnwrap(readme.components(separatedBy: "\n## Configuration\n").dropFirst().first)
            .components(separatedBy: "\n## ").first ?? ""
        let lines = section.split(separator: "\n", omittingEmptySubsequences: false)
        let header = try XCTUnwrap(lines.firstIndex { $0.replacing(" ", with: "") == "|key|default|meaning|" },
                                   "no | key | default | meaning | table under ## Configuration")
        var rows: [(String, String)] = []
        for line in lines[(header + 2)...] {
            guard line.hasPrefix("|") else { break }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            XCTAssertGreaterThanOrEqual(cells.count, 4, String(line))
            // `a`, `b`: the names are the odd pieces between backticks.
            let names = cells[1].split(separator: "`", omittingEmptySubsequences: false).enumerated()
                .filter { $0.offset % 2 == 1 }.map { String($0.element) }
            for name in names { rows.append((name, cells[2].replacing("`", with: ""))) }
        }
        return rows
    }

    func testTheConfigurationPageListsExactlyTheKeysOfTheTable() throws {
        let readme = try readmeTable()
        XCTAssertEqual(readme.map(\.key).sorted(), Config.keys.sorted())
        XCTAssertEqual(Set(readme.map(\.key)).count, readme.count, "a key listed twice in doc/configuration.md")
    }

    func testTheConfigurationPagesDefaultsBeginWithTheTablesDefault() throws {
        for (key, cell) in try readmeTable() {
            guard let k = ConfigKey.named(key) else { continue }  // the test above names it
            XCTAssertTrue(cell.hasPrefix(k.defaultShown), "\(key): doc/configuration.md says '\(cell)', the table '\(k.defaultShown)'")
        }
    }

    func testDefaultsShownAreConfigsOwn() {
        XCTAssertEqual(Config.keys, ConfigKey.all.map(\.name))
        for k in ConfigKey.all {
            // Keys without a value by default (none, from host, PulseAudio's default) are not shown.
            guard let shown = k.shown(Config()) else { continue }
            XCTAssertEqual(shown, k.defaultShown, k.name)
        }
    }

    func testEveryKeyIsStored() throws {
        let ca = #filePath  // any file this process can read
        let values: [String: String] = [
            "host": "musicbox.local", "stream_url": "http://[::1]:8000/stream.flac", "rpc_url": "https://h/rpc",
            "ws_url": "WSS://h/ws", "user": "me", "password": "pw", "password_command": "pass show groove",
            "control": "server", "volume": "local", "sink": "headphones", "notify": "yes", "autoplay": "on",
            "heard_sync": "0", "server_delay_ms": "250", "heard_sync_learn": "off", "ca_file": ca, "on_output_lost": "follow", "keep_warm": "0",
            "remote_host": "groove.invalid", "remote_stream_url": "https://r/stream.flac", "remote_rpc_url": "https://r/rpc",
            "remote_ws_url": "wss://r/ws",
        ]
        XCTAssertEqual(Set(values.keys), Set(Config.keys))
        var c = Config()
        for k in Config.keys { try c.set(k, "  \(values[k]!) \t", origin: "test") }
        var expected = Config()
        expected.host = "musicbox.local"
        expected.streamURL = "http://[::1]:8000/stream.flac"
        expected.rpcURL = "https://h/rpc"
        expected.wsURL = "WSS://h/ws"
        expected.user = "me"
        expected.password = "pw"
        expected.passwordCommand = "pass show groove"
        expected.control = .server
        expected.volume = .local
        expected.sink = "headphones"
        expected.onOutputLost = .follow
        expected.keepWarmSeconds = 0
        expected.notify = true
        expected.autoplay = true
        expected.heardSync = false
        expected.serverDelayMs = 250
        expected.heardSyncLearn = false
        expected.caFile = ca
        expected.remoteHost = "groove.invalid"
        expected.remoteStreamURL = "https://r/stream.flac"
        expected.remoteRPCURL = "https://r/rpc"
        expected.remoteWSURL = "wss://r/ws"
        XCTAssertEqual(c, expected)
    }

    func testErrorsKeepTheirWords() {
        let cases: [(String, String, String)] = [
            ("colour", "blue", "f:2: unknown key 'colour' (known: \(Config.keys.joined(separator: ", ")))"),
            ("host", "", "f:2: host is empty"),
            ("host", "http://h/", "f:2: host: 'http://h/' is a host name or address, not a URL"),
            ("stream_url", "ftp://x", "f:2: stream_url: 'ftp://x' is not an http(s):// or ws(s):// URL"),
            ("ws_url", "ws://h x/", "f:2: ws_url: 'ws://h x/' is not an http(s):// or ws(s):// URL"),
            ("rpc_url", "", "f:2: rpc_url: '' is not an http(s):// or ws(s):// URL"),
            ("remote_host", "https://h/", "f:2: remote_host: 'https://h/' is a host name or address, not a URL"),
            ("remote_stream_url", "https://u:p@h/s", "f:2: remote_stream_url: a user or password inside the URL is refused "
             + "(it would show wherever the URL does); give the user as 'user' and the password as 'password' or 'password_command'"),
            ("user", "", "f:2: user is empty"),
            ("control", "everything", "f:2: control: 'everything' is not local or server"),
            ("volume", "loud", "f:2: volume: 'loud' is not server or local"),
            ("notify", "maybe", "f:2: notify: 'maybe' is not true or false"),
            ("server_delay_ms", "-1", "f:2: server_delay_ms: '-1' is not a number of milliseconds from 0 to 30000"),
            ("server_delay_ms", "30001", "f:2: server_delay_ms: '30001' is not a number of milliseconds from 0 to 30000"),
            ("ca_file", "/nonexistent/ca.pem", "f:2: ca_file: /nonexistent/ca.pem: No such file or directory"),
            ("ca_file", "", "f:2: ca_file is empty"),
        ]
        for (key, value, message) in cases {
            var c = Config()
            XCTAssertThrowsError(try c.set(key, value, origin: "f:2"), key) {
                XCTAssertEqual(($0 as? ConfigError)?.message, message)
            }
        }
    }

    func testAPasswordFromAReadableFileIsRefused() {
        XCTAssertThrowsError(try Config.parse("host = h\npassword = hunter2\n", path: "/c", passwordAllowed: false)) {
            XCTAssertEqual(($0 as? ConfigError)?.message,
                           "/c:2: password: refusing a password from a file that group or others can read; run: chmod 600 /c")
        }
        XCTAssertEqual(try Config.parse("password = hunter2\n", path: "/c", passwordAllowed: true).password, "hunter2")
    }

    func testDescriptionNeverShowsThePassword() throws {
        XCTAssertEqual(Config().description,
                       "user=listener password=none control=local volume=server on_output_lost=pause keep_warm=30 notify=false autoplay=false "
                       + "heard_sync=true server_delay_ms=400 heard_sync_learn=true")
        var c = Config()
        c.host = "::1"
        c.password = "hunter2"
        c.passwordCommand = "echo hunter2"
        c.heardSync = false
        XCTAssertEqual(c.description,
                       "host=::1 stream_url=http://[::1]:8000/stream.flac user=listener password=set password_command=set "
                       + "control=local volume=server on_output_lost=pause keep_warm=30 notify=false autoplay=false heard_sync=false")
    }

    /// The flags as main reads them, applied over a file's values: a flag wins, booleans too.
    func testFlagsWinOverTheFileBooleansToo() throws {
        func parse(_ argv: [String], over file: String = "notify = true\nautoplay = true\n") throws -> (Config, [String]) {
            var c = try Config.parse(file, path: "/c", passwordAllowed: true)
            var rest: [String] = []
            var i = 0
            while i < argv.count {
                guard let s = try ConfigFlags.read(argv, at: i) else { rest.append(argv[i]); i += 1; continue }
                try c.set(s.key.name, s.value, origin: s.key.flag)
                i = s.next
            }
            return (c, rest)
        }
        var (c, rest) = try parse(["--notify=false", "--autoplay", "false"])
        XCTAssertFalse(c.notify, "--notify=false over the file's true")
        XCTAssertFalse(c.autoplay, "--autoplay false over the file's true")
        XCTAssertEqual(rest, [])
        (c, rest) = try parse(["--notify", "status", "--autoplay"], over: "")
        XCTAssertTrue(c.notify, "alone: true; the next argument is not a boolean, so it is not taken")
        XCTAssertTrue(c.autoplay, "alone at the end: true")
        XCTAssertEqual(rest, ["status"])
        (c, _) = try parse(["--notify", "TRUE", "--heard-sync=false", "--stream-url=http://h:8000/s.flac", "--user", "me"], over: "")
        XCTAssertTrue(c.notify)
        XCTAssertFalse(c.heardSync)
        XCTAssertEqual(c.streamURL, "http://h:8000/s.flac")
        XCTAssertEqual(c.user, "me")
        XCTAssertThrowsError(try parse(["--notify=maybe"])) {
            XCTAssertEqual(($0 as? ConfigError)?.message, "--notify: notify: 'maybe' is not true or false")
        }
        XCTAssertThrowsError(try parse(["--user"])) { XCTAssertEqual(($0 as? ConfigError)?.message, "--user needs a value; see --help") }
        for argv in [["--password", "x"], ["--password=x"]] {
            XCTAssertThrowsError(try parse(argv)) { XCTAssertFalse("\($0)".contains("x\""), "the value is not said") }
        }
        XCTAssertNil(try ConfigFlags.read(["--colour=blue"], at: 0))
    }

    func testCommandLineSpellings() throws {
        XCTAssertEqual(ConfigKey.named("stream_url")?.commandLineUsage, "--stream-url URL")
        XCTAssertEqual(ConfigKey.named("control")?.commandLineUsage, "--control local|server")
        XCTAssertEqual(ConfigKey.named("notify")?.commandLineUsage, "--notify [true|false]")
        XCTAssertNil(ConfigKey.named("password")?.commandLineUsage)
        XCTAssertEqual(ConfigKey.all.filter { $0.form == .secret }.map(\.name), ["password"])
        for k in ConfigKey.all { XCTAssertFalse(k.help.isEmpty, k.name) }
    }
}
