import DBus
import Foundation
import MPRIS
import XCTest

/// scripts/install into a staging root: every file lands, validates, and uninstall removes
/// exactly what was installed. Then D-Bus activation from the installed service file.
final class InstallTests: XCTestCase {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("groove-install-\(getpid())")

    override func tearDown() { try? FileManager.default.removeItem(at: root) }

    func install(_ env: [String: String], uninstall: Bool = false) throws -> (Int32, String) {
        var e = ProcessInfo.processInfo.environment
        e["GROOVE_BRIDGE_BINARY"] = DaemonTestCase.binary.path
        for (k, v) in env { e[k] = v }
        let r = try runCommand([Rig.projectRoot.appendingPathComponent("scripts/install").path] + (uninstall ? ["--uninstall"] : []),
                               env: e, timeout: 60)
        return (r.status, r.out + r.err)
    }

    func files(under dir: URL) -> [String] {
        let e = FileManager.default.enumerator(at: dir, includingPropertiesForKeys: [.isRegularFileKey])
        var out: [String] = []
        while let u = e?.nextObject() as? URL {
            if (try? u.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true {
                out.append(String(u.path.dropFirst(dir.path.count)))
            }
        }
        return out.sorted()
    }

    func testInstallLandsEveryFileValidatesAndUninstallsExactly() throws {
        let dest = root.appendingPathComponent("stage")
        var (status, out) = try install(["DESTDIR": dest.path, "PREFIX": "/usr/local"])
        XCTAssertEqual(status, 0, out)
        XCTAssertEqual(files(under: dest), [
            "/etc/xdg/autostart/groove-bridge.desktop",
            "/usr/local/bin/groove-bridge",
            "/usr/local/lib/systemd/user/groove-bridge.service",
            "/usr/local/share/applications/groove-bridge.desktop",
            "/usr/local/share/bash-completion/completions/groove-bridge",
            "/usr/local/share/dbus-1/interfaces/org.mpris.MediaPlayer2.groove.xml",
            "/usr/local/share/dbus-1/services/org.mpris.MediaPlayer2.groove.service",
            "/usr/local/share/doc/groove-bridge/README.md",
            "/usr/local/share/doc/groove-bridge/doc/behaviour.md",
            "/usr/local/share/doc/groove-bridge/doc/configuration.md",
            "/usr/local/share/doc/groove-bridge/doc/developing.md",
            "/usr/local/share/groove-bridge/install-manifest",
            "/usr/local/share/icons/hicolor/scalable/apps/groove-bridge.svg",
            "/usr/local/share/man/man1/groove-bridge.1",
        ])
        for desktop in ["/usr/local/share/applications/groove-bridge.desktop", "/etc/xdg/autostart/groove-bridge.desktop"] {
            let v = try runCommand(["desktop-file-validate", dest.path + desktop])
            XCTAssertEqual(v.status, 0, "\(desktop): \(v.out)\(v.err)")
            XCTAssertEqual(v.out + v.err, "", "\(desktop) has warnings")
        }
        let unit = try String(contentsOfFile: dest.path + "/usr/local/lib/systemd/user/groove-bridge.service", encoding: .utf8)
        XCTAssertTrue(unit.contains("ExecStart=/usr/local/bin/groove-bridge\n"))
        XCTAssertTrue(unit.contains("Type=dbus\nBusName=org.mpris.MediaPlayer2.groove"))
        XCTAssertNil(unit.range(of: "@[A-Z]+@", options: .regularExpression), "unsubstituted template")
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze") {
            let v = try runCommand(["systemd-analyze", "--user", "verify", dest.path + "/usr/local/lib/systemd/user/groove-bridge.service"])
            print("systemd-analyze verify: \(v.status) \(v.err)")
        }
        let autostart = try String(contentsOfFile: dest.path + "/etc/xdg/autostart/groove-bridge.desktop", encoding: .utf8)
        XCTAssertTrue(autostart.contains("X-systemd-skip=true"))
        let svg = try String(contentsOfFile: dest.path + "/usr/local/share/icons/hicolor/scalable/apps/groove-bridge.svg", encoding: .utf8)
        XCTAssertTrue(svg.contains("<svg") && svg.hasSuffix("</svg>\n"), "icon is not an SVG")

        (status, out) = try install(["DESTDIR": dest.path, "PREFIX": "/usr/local"], uninstall: true)
        XCTAssertEqual(status, 0, out)
        XCTAssertEqual(files(under: dest), [], "uninstall left files")
    }

    func testDBusActivationStartsTheInstalledBridge() throws {
        let rig = try Rig.get()
        let prefix = root.appendingPathComponent("prefix")
        let (status, out) = try install(["PREFIX": prefix.path, "AUTOSTARTDIR": root.appendingPathComponent("autostart").path])
        XCTAssertEqual(status, 0, out)
        // The user's configuration, as the activated bridge will find it.
        let cfgDir = root.appendingPathComponent("config/groove-bridge")
        try FileManager.default.createDirectory(at: cfgDir, withIntermediateDirectories: true)
        let cfg = cfgDir.appendingPathComponent("config")
        try "rpc_url = \(rig.info.groove_rpc_url)\nws_url = \(rig.info.groove_ws_url)\nstream_url = \(rig.info.stream_url)\n"
            .write(to: cfg, atomically: true, encoding: .utf8)
        // A session bus whose only service directory is the installed one.
        let busDir = root.appendingPathComponent("bus")
        try FileManager.default.createDirectory(at: busDir, withIntermediateDirectories: true)
        let busConf = busDir.appendingPathComponent("session.conf")
        try """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig><type>session</type><listen>unix:path=\(busDir.path)/socket</listen>
            <servicedir>\(prefix.path)/share/dbus-1/services</servicedir>
            <policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy>
            </busconfig>
            """.write(to: busConf, atomically: true, encoding: .utf8)
        let daemon = Process()
        daemon.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        daemon.arguments = ["--config-file=\(busConf.path)", "--nofork", "--nopidfile"]
        var env = rig.clientEnvironment
        env["XDG_CONFIG_HOME"] = root.appendingPathComponent("config").path
        env["GROOVE_PASSWORD"] = rig.info.password
        daemon.environment = env
        // Never the test's output (nor the bridge's it starts): a process left holding it would
        // keep `swift test` waiting.
        daemon.standardOutput = FileHandle.nullDevice
        daemon.standardError = FileHandle.nullDevice
        try daemon.run()
        defer { daemon.terminate(); daemon.waitUntilExit() }
        let address = "unix:path=\(busDir.path)/socket"
        let client = try XCTUnwrap(connectWhenUp(address), "the bus did not start")
        // Calling the name activates the service.
        let identity = try client.call(destination: MPRISService.busName, path: MPRISInterface.objectPath,
                                       interface: MPRISInterface.properties, member: "Get",
                                       args: [.string(MPRISInterface.root), .string("Identity")], timeoutMs: 15000)
        XCTAssertEqual(identity.first?.variantValue, .string("Groove Audio"))
        let title = try rig.currentTitle()
        XCTAssertTrue(waitUntil(5) {
            var e = rig.clientEnvironment
            e["DBUS_SESSION_BUS_ADDRESS"] = address
            return (try? runCommand(["playerctl", "-p", "groove", "metadata", "--format", "{{title}}"], env: e).out
                .trimmingCharacters(in: .whitespacesAndNewlines)) == title
        }, "activated bridge does not show the track")
        _ = try client.call(destination: MPRISService.busName, path: MPRISInterface.objectPath,
                            interface: MPRISInterface.root, member: "Quit")
        XCTAssertTrue(waitUntil(5) { client.owner(of: MPRISService.busName) == nil })
    }
}
