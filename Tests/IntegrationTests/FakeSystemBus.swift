import DBus
import Foundation
import Support
import Synchronization

/// logind and NetworkManager as far as the bridge sees them, on the rig's system bus: this test
/// process owns their names, answers NetworkManager's `State`, and sends their real signals.
final class FakeSystemBus: DBusObject, @unchecked Sendable {
    static let login1 = (name: "org.freedesktop.login1", path: "/org/freedesktop/login1",
                         interface: "org.freedesktop.login1.Manager")
    static let networkManager = (name: "org.freedesktop.NetworkManager", path: "/org/freedesktop/NetworkManager",
                                 interface: "org.freedesktop.NetworkManager")

    private let connection: DBusConnection
    private let state = Mutex<UInt32>(70)

    init(address: String) throws {
        connection = try DBusConnection(address: address)
        for name in [Self.login1.name, Self.networkManager.name] {
            guard try connection.requestName(name) == .primaryOwner else {
                throw Rig.RigError(message: "\(name) is taken on the rig's system bus")
            }
        }
        connection.register(path: Self.networkManager.path, object: self)
        connection.start(onDisconnect: {})
    }

    /// Releases the names (the next bridge finds no logind or NetworkManager).
    func close() { connection.stop(waitMs: 1000) }

    func handle(_ call: MethodCall) -> MethodReply {
        guard call.member == "Get", call.args.count == 2, call.args[1].stringValue == "State" else {
            return .error(name: "org.freedesktop.DBus.Error.UnknownMethod", message: "only State is faked")
        }
        return .values([.variant(.uint32(state.withLock { $0 }))])
    }

    /// logind's `PrepareForSleep(b)`: true as the machine goes to sleep, false once it is awake again.
    func prepareForSleep(_ sleeping: Bool) {
        let l = Self.login1
        connection.post { $0.emitSignal(path: l.path, interface: l.interface, member: "PrepareForSleep", args: [.bool(sleeping)]) }
    }

    /// NetworkManager's `StateChanged(u)`: 70 connected (globally), 20 disconnected.
    func networkState(_ value: UInt32) {
        state.withLock { $0 = value }
        let n = Self.networkManager
        connection.post { $0.emitSignal(path: n.path, interface: n.interface, member: "StateChanged", args: [.uint32(value)]) }
    }
}

/// A daemon test with logind and NetworkManager on the rig's system bus (there ahead of the
/// bridge, which looks for them at start), and the sink recorded.
class SystemBusTestCase: DaemonTestCase {
    var system: FakeSystemBus!
    var tones: [Int] { rig.info.tracks.map(\.freq) }

    override func setUpWithError() throws {
        rig = try Rig.get()
        system = try FakeSystemBus(address: rig.info.system_bus_address)
        try super.setUpWithError()
        recorder = try Recorder(rig: rig)
    }

    override func tearDown() {
        super.tearDown()
        system?.close()
    }
}

extension DaemonTestCase {
    /// The daemon's status as a JSON object.
    func statusObject() -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(status().utf8)) as? [String: Any]) ?? [:]
    }

    /// The first moment from `fromUs` on that any of the rig's tones is heard, waiting up to
    /// `timeout` seconds for it; nil if none is.
    func firstMusic(fromUs: Int64, timeout: Double) -> Int64? {
        guard let recorder else { return nil }
        let tones = rig.info.tracks.map(\.freq)
        let deadline = monotonicUs() + Int64(timeout * 1_000_000)
        while monotonicUs() < deadline {
            if recorder.recentTone(ms: 100, candidates: tones) != nil {
                return tones.compactMap { recorder.firstHeard($0, candidates: tones, fromUs: fromUs) }.min()
            }
            usleep(20_000)
        }
        return nil
    }

    /// Sleeps until `us` on the monotonic clock.
    func sleepUntil(_ us: Int64) {
        let left = us - monotonicUs()
        if left > 0 { usleep(UInt32(clamping: left)) }
    }
}

/// The median of a list of seconds.
func median(_ values: [Double]) -> Double {
    let s = values.sorted()
    guard !s.isEmpty else { return .nan }
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}
