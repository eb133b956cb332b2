import DBus
import Foundation
import MPRIS
import Support
import Synchronization
import XCTest

/// Any program on the session bus may call the bridge with anything. Every call gets a reply or a
/// named error, the music never stops, and a flood of calls does not slow the answers or the audio.
final class HostileBusTests: DaemonTestCase {
    static let worst: [DBusValue] = [
        .int64(.max), .int64(.min), .int64(0), .int64(-1), .double(.nan), .double(.infinity), .double(-.infinity),
        .double(-1), .double(1e308), .string(""), .string(String(repeating: "x", count: 1 << 20)), .bool(true),
        .int32(-1), .uint64(.max), .objectPath(ObjectPath("/")!), .objectPath(TrackMetadata.noTrackID),
        .strings([]), .vardict([]),
    ]

    /// Calls and returns the error name, or nil for a reply. A call the bridge does not answer
    /// (NoReply after 2 s) fails the test: that is what a crash or a hang looks like to a client.
    @discardableResult
    func call(_ iface: String?, _ member: String, _ args: [DBusValue], path: String = MPRISInterface.objectPath) -> String? {
        do {
            _ = try client.call(destination: MPRISService.busName, path: path, interface: iface, member: member,
                                args: args, timeoutMs: 2000)
            return nil
        } catch {
            XCTAssertNotEqual(error.name, "org.freedesktop.DBus.Error.NoReply", "\(iface ?? "-").\(member)\(args.map(\.signature))")
            XCTAssertNotEqual(error.name, "org.freedesktop.DBus.Error.ServiceUnknown", "the bridge is gone after \(member)")
            return error.name
        }
    }

    func testEveryCallWithTheWorstValuesGetsAnAnswerAndTheMusicGoesOn() throws {
        XCTAssertTrue(waitUntil(10) { status().contains("\"stream\":\"playing\"") }, status())
        let pid = daemon.processIdentifier
        // The two calls that crashed it: Seek by int64's extremes.
        XCTAssertNil(call(MPRISInterface.player, "Seek", [.int64(.max)]))
        XCTAssertNil(call(MPRISInterface.player, "Seek", [.int64(.min)]))

        let members = ["Play", "Pause", "PlayPause", "Stop", "Next", "Previous", "Seek", "SetPosition", "OpenUri",
                       "Raise", "Get", "GetAll", "Set", "Introspect", "Ping", "GetMachineId", "Status", "Nope"]
        let interfaces: [String?] = [MPRISInterface.player, MPRISInterface.root, MPRISInterface.properties,
                                     MPRISInterface.introspectable, MPRISService.statusInterface, "org.example.Nope", nil]
        let few: [DBusValue] = [.int64(.max), .double(.nan), .string(""), .objectPath(TrackMetadata.noTrackID), .bool(false)]
        var answered = 0
        for iface in interfaces {
            for member in members {
                call(iface, member, [])
                for v in HostileBusTests.worst { call(iface, member, [v]) }
                for a in few { for b in few { call(iface, member, [a, b]) } }
                answered += 1 + HostileBusTests.worst.count + few.count * few.count
            }
        }
        // Every property of both interfaces, set to every worst value, plus unknown ones.
        let names = (MPRISProperty.root + MPRISProperty.player).map(\.name) + ["Nope", ""]
        for iface in [MPRISInterface.root, MPRISInterface.player, "org.example.Nope", ""] {
            for name in names {
                call(MPRISInterface.properties, "Get", [.string(iface), .string(name)])
                for v in HostileBusTests.worst {
                    call(MPRISInterface.properties, "Set", [.string(iface), .string(name), .variant(v)])
                }
            }
        }
        XCTAssertEqual(call(MPRISInterface.properties, "Set", [.string(MPRISInterface.player), .string("Position"),
                                                               .variant(.int64(0))]),
                       "org.freedesktop.DBus.Error.PropertyReadOnly")
        XCTAssertEqual(call(MPRISInterface.properties, "Set", [.string(MPRISInterface.player), .string("Volume"),
                                                               .variant(.double(.nan))]),
                       "org.freedesktop.DBus.Error.InvalidArgs")
        XCTAssertEqual(call(MPRISInterface.player, "Nope", []), "org.freedesktop.DBus.Error.UnknownMethod")
        XCTAssertNotNil(call(MPRISInterface.player, "Play", [], path: "/org/mpris/MediaPlayer2/Nope"))
        print("hostile calls answered: \(answered + names.count * 4 * (1 + HostileBusTests.worst.count))")

        // Still the same process, still on the bus, and it plays again when asked.
        XCTAssertEqual(daemon.processIdentifier, pid)
        XCTAssertTrue(daemon.isRunning)
        XCTAssertNil(call(MPRISInterface.player, "Play", []))
        XCTAssertTrue(waitUntil(10) { (try? playerctl("status")) == "Playing" && status().contains("\"stream\":\"playing\"") },
                      status())
        _ = try? rig.rpc("core.mixer.set_volume", ["volume": 100])
        _ = try? rig.rpc("core.tracklist.set_random", ["value": false])
        _ = try? rig.rpc("core.tracklist.set_single", ["value": false])
        _ = try? rig.rpc("core.tracklist.set_repeat", ["value": true])
    }

    func testFourClientsFloodingForTenSecondsWhilePlaying() throws {
        let rec = try Recorder(rig: rig)
        recorder = rec
        let tones = rig.info.tracks.map(\.freq)
        XCTAssertNotNil(rec.waitForTone(try expectedTone(), candidates: tones, timeout: 8), "no tone before the flood")
        let start = monotonicUs()
        let times = Mutex<[Int64]>([])
        let calls = Atomic<Int>(0)
        var threads: [Thread] = []
        let done = DispatchGroup()
        for i in 0..<4 {
            done.enter()
            let t = Thread { [rig] in
                defer { done.leave() }
                guard let c = try? DBusConnection(address: rig!.info.bus_address) else { return }
                var mine: [Int64] = []
                var n = 0
                while monotonicUs() - start < 10_000_000 {
                    n += 1
                    let t0 = monotonicUs()
                    switch (n + i) % 3 {
                    case 0:
                        _ = try? c.call(destination: MPRISService.busName, path: MPRISInterface.objectPath,
                                        interface: MPRISInterface.properties, member: "GetAll",
                                        args: [.string(MPRISInterface.player)], timeoutMs: 2000)
                        mine.append(monotonicUs() - t0)
                    case 1:
                        _ = try? c.call(destination: MPRISService.busName, path: MPRISInterface.objectPath,
                                        interface: MPRISInterface.properties, member: "Get",
                                        args: [.string(MPRISInterface.player), .string("Position")], timeoutMs: 2000)
                    default:
                        // The volume the house already has: a real Set, nothing audible.
                        _ = try? c.call(destination: MPRISService.busName, path: MPRISInterface.objectPath,
                                        interface: MPRISInterface.properties, member: "Set",
                                        args: [.string(MPRISInterface.player), .string("Volume"), .variant(.double(1.0))],
                                        timeoutMs: 2000)
                    }
                }
                calls.add(n, ordering: .relaxed)
                times.withLock { $0 += mine }
            }
            threads.append(t)
            t.start()
        }
        done.wait()
        let end = monotonicUs()
        let sorted = times.withLock { $0 }.sorted()
        XCTAssertGreaterThan(sorted.count, 100)
        let p50 = sorted[sorted.count / 2], p99 = sorted[sorted.count * 99 / 100]
        print("flood: \(calls.load(ordering: .relaxed)) calls in 10 s from 4 clients; GetAll p50 \(p50) µs, p99 \(p99) µs, max \(sorted.last!) µs")
        // The figures are BENCHMARKS.md's; the bound is answerBoundUs (no GetAll waits on the
        // flood's other calls or the network).
        XCTAssertLessThan(p99, answerBoundUs, "GetAll p99 \(p99) µs under the flood")

        // No gap in the audio: no 100 ms without sound while the flood ran.
        var silentRun = 0, longest = 0
        var i = rec.index(atTime: start)
        let last = rec.index(atTime: end)
        while i + 441 <= last {
            if rec.rms(rec.window(i, 441)) < 0.001 { silentRun += 10 } else { silentRun = 0 }
            longest = max(longest, silentRun)
            i += 441
        }
        print("flood: longest silence while it ran: \(longest) ms")
        XCTAssertLessThan(longest, 100, "the audio stopped for \(longest) ms under the flood")
        XCTAssertEqual(try playerctl("status"), "Playing")
    }
}
