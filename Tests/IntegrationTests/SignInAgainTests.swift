import DBus
import Foundation
import MPRIS
import XCTest

/// "Sign in again": the running bridge, a refused password, and the desktop's notification
/// server (the recording stand-in of BridgeTests) on the rig's bus.
final class SignInAgainTests: DaemonTestCase {
    func testARefusedPasswordAsksOnceToSignInAgainEvenWithNotifyOff() throws {
        let notifications = try DBusConnection(address: rig.info.bus_address)
        let server = BridgeTests.NotificationServer()
        notifications.register(path: "/org/freedesktop/Notifications", object: server)
        XCTAssertEqual(try notifications.requestName("org.freedesktop.Notifications"), .primaryOwner)
        notifications.start(onDisconnect: {})
        defer { notifications.stop() }
        let write = try restartWithPasswordInFile("not-the-password", extra: "notify = false\n")
        let logged = try XCTUnwrap(output)
        let summary = "Groove Audio refused the password for listener@127.0.0.1"
        XCTAssertTrue(waitUntil(10) { server.calls.withLock { $0.count } == 1 }, "no notification: \(status())")
        let shown = server.calls.withLock { $0[0] }
        XCTAssertEqual(shown.summary, summary)
        XCTAssertEqual(shown.body, "run groove-bridge login")
        XCTAssertTrue(status().contains("\"sign_in\":\"\(summary) — run groove-bridge login\""), status())

        // The same wrong password again (a reload reconnects a failed stream): the same episode.
        kill(daemon.processIdentifier, SIGHUP)
        XCTAssertTrue(logged.wait(for: "configuration reloaded", timeout: 5), logged.text)
        XCTAssertTrue(logged.wait(for: "stream: failed", timeout: 5), logged.text)

        // Fixed: the episode ends; no notification, and status says nothing more of it.
        try write(rig.info.password)
        kill(daemon.processIdentifier, SIGHUP)
        XCTAssertTrue(waitUntil(8) { status().contains("\"stream\":\"playing\"") }, status())
        XCTAssertFalse(status().contains("sign_in"), status())
        stopDaemon()
        XCTAssertTrue(logged.wait(for: "stopping", timeout: 5), logged.text)
        // Asserted once the bridge has exited: whatever the refusal after the first reload would
        // have asked, it has asked by now.
        XCTAssertEqual(server.calls.withLock { $0.count }, 1, "asked again within one episode")
        XCTAssertEqual(logged.text.components(separatedBy: summary).count - 1, 1, logged.text)
        XCTAssertFalse(logged.text.contains("not-the-password"))
    }
}
