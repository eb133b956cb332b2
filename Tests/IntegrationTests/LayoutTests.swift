import Bridge
import DBus
import Foundation
import Mopidy
import MPRIS
import XCTest

/// A host given alone: the bridge tries the Groove Audio layout (nginx's /api/mopidy/rpc and
/// /ws/mopidy), then plain Mopidy's (/mopidy/rpc, /mopidy/ws), on every connect, and follows the
/// one that answered. The real ports are 8180 and 6680; the rig's are picked at run time, so the
/// same layouts are built here with the rig's ports and handed to a Bridge in this process.
final class LayoutTests: XCTestCase {
    var rig: Rig!
    var bus: DBusConnection!
    var bridge: Bridge?

    override func setUpWithError() throws {
        rig = try Rig.get()
        let probe = try DBusConnection(address: rig.info.bus_address)
        XCTAssertTrue(waitUntil(5) { probe.owner(of: MPRISService.busName) == nil }, "a bridge is already on the bus")
        bus = try DBusConnection(address: rig.info.bus_address)
    }

    override func tearDown() {
        bridge?.shutdown()
        bus?.stop(waitMs: 2000)
        bridge = nil
        _ = try? rig?.start("mopidy")
    }

    /// A loopback port nothing listens on (bound, read back and closed again).
    func closedPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                bind(fd, sa, len) == 0 && getsockname(fd, sa, &len) == 0
            }
        }
        guard ok else { throw Rig.RigError(message: "cannot bind a loopback port") }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    func startBridge(groovePort: Int, plainPort: Int) throws -> Bridge {
        let layouts = MopidyEndpoints.layouts(host: "127.0.0.1", groovePort: groovePort, plainPort: plainPort)
        let art = FileManager.default.temporaryDirectory.appendingPathComponent("groove-layout-art-\(getpid())").path
        let b = Bridge(config: Config(), layouts: layouts, artDirectory: art, onQuit: {})
        let name = try b.start(connection: bus, allowInstance: false)
        XCTAssertEqual(name, MPRISService.busName)
        bus.start(onDisconnect: {})
        bridge = b
        return b
    }

    func playerctlTitle() -> String? {
        guard let r = try? runCommand(["playerctl", "-p", "groove", "metadata", "title"], env: rig.clientEnvironment,
                                      timeout: 10), r.status == 0 else { return nil }
        return r.out.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func testGrooveLayoutIsPreferredWhenBothAnswer() throws {
        let ports = rig.info.ports
        let b = try startBridge(groovePort: ports["nginx"]!, plainPort: ports["mopidy"]!)
        let title = try XCTUnwrap(rig.currentTitle())
        XCTAssertTrue(waitUntil(10) { playerctlTitle() == title }, "no metadata through the Groove layout")
        XCTAssertEqual(b.client.endpoints.rpcURL, rig.info.groove_rpc_url)
        XCTAssertEqual(b.client.endpoints.wsURL, rig.info.groove_ws_url)
    }

    func testPlainMopidyIsUsedWhenNoGrooveLayoutAnswers() throws {
        let b = try startBridge(groovePort: try closedPort(), plainPort: rig.info.ports["mopidy"]!)
        let title = try XCTUnwrap(rig.currentTitle())
        XCTAssertTrue(waitUntil(15) { playerctlTitle() == title }, "no metadata through the plain layout")
        XCTAssertEqual(b.client.endpoints.rpcURL, rig.info.mopidy_rpc_url)
        XCTAssertEqual(b.client.endpoints.wsURL, rig.info.mopidy_ws_url)
    }

    /// Down at login, back later: found in the layout it comes back in, with nothing to restart.
    func testAServerDownAtStartIsFoundWhenItComesBack() throws {
        try rig.stop("mopidy")
        let b = try startBridge(groovePort: try closedPort(), plainPort: rig.info.ports["mopidy"]!)
        // Both layouts failed at least once; the RPC client still points at the first.
        func reconnects() -> Int {
            guard case .object(let o)? = try? JSON.parse(b.statusJSON()) else { return 0 }
            return o["event_reconnects"]?.int ?? 0
        }
        XCTAssertTrue(waitUntil(10) { reconnects() >= 1 }, b.statusJSON())
        XCTAssertTrue(b.client.endpoints.rpcURL.hasSuffix("/api/mopidy/rpc"), b.client.endpoints.rpcURL)
        try rig.start("mopidy")
        let title = try XCTUnwrap(rig.currentTitle())
        XCTAssertTrue(waitUntil(40) { playerctlTitle() == title }, "the plain layout was not found after Mopidy came back")
        XCTAssertEqual(b.client.endpoints.rpcURL, rig.info.mopidy_rpc_url)
    }
}
