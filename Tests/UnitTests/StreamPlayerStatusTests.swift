import Audio
import Dispatch
import Glibc
import Support
import Synchronization
import XCTest

final class StatusSequence: StreamPlayerDelegate {
    private let list = Mutex<[(status: StreamStatus, sequence: Int)]>([])
    func streamPlayer(_ event: StreamEvent) {
        guard case .status(let status, let sequence) = event else { return }
        list.withLock { $0.append((status, sequence)) }
    }
    var all: [(status: StreamStatus, sequence: Int)] { list.withLock { $0 } }
    var last: StreamStatus? { list.withLock { $0.last?.status } }
}

/// The player's statuses as its delegate hears them, with threads racing on play/pause/stop
/// against a loopback port where nothing listens (each play is refused at once, so the network
/// thread joins the race with its own statuses).
final class StreamPlayerStatusTests: XCTestCase {
    /// A TCP port on 127.0.0.1 that is bound, so no one else takes it, but not listening, so a
    /// connection is refused.
    var socket: Int32 = -1
    var port = 0

    override func setUpWithError() throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { p in
                bind(socket, p, len) == 0 && getsockname(socket, p, &len) == 0
            }
        }
        XCTAssertTrue(bound, "cannot bind a loopback port")
        port = Int(UInt16(bigEndian: addr.sin_port))
    }

    override func tearDown() { close(socket) }

    /// Four threads press play, pause and stop in a random order, ending on pause or stop. Once
    /// they are done, the last status the delegate heard is the player's, and it is the pause or
    /// stop, not a "connecting" of a play that came before; sequences only go up.
    func testTheDelegateHearsStatusesInTheOrderTheyHappened() {
        let log = StatusSequence()
        let player = StreamPlayer(config: StreamConfig(url: "http://127.0.0.1:\(port)/stream.flac"), delegate: log)
        defer { player.stop() }
        var wrong: [String] = []
        for round in 0..<300 {
            let group = DispatchGroup()
            for t in 0..<4 {
                DispatchQueue.global().async(group: group) {
                    for _ in 0..<Int.random(in: 1...6) {
                        switch Int.random(in: 0..<3) {
                        case 0: player.play()
                        case 1: player.pause()
                        default: player.stop()
                        }
                        // Room for the network thread's refused connection between presses.
                        usleep(UInt32.random(in: 0...500))
                    }
                    if t % 2 == 0 { player.pause() } else { player.stop() }
                }
            }
            group.wait()
            // Whatever a stray thread could still say comes within a moment; then all is quiet.
            let settled = waitFor(seconds: 0.5) {
                let s = player.currentStatus
                return (s == .paused || s == .stopped) && log.last == s
            }
            if !settled { wrong.append("round \(round): player \(player.currentStatus), delegate last \(String(describing: log.last))") }
        }
        XCTAssertEqual(wrong, [], "\(wrong.count) of 300 rounds ended wrong")
        let refused = log.all.filter { if case .reconnecting = $0.status { return true }; return false }.count
        XCTAssertGreaterThan(refused, 0, "the network thread never took part")
        print("statuses heard: \(log.all.count), of them reconnecting: \(refused)")
        let sequences = log.all.map(\.sequence)
        let disorder = zip(sequences, sequences.dropFirst()).filter { $0.0 >= $0.1 }
        XCTAssertEqual(disorder.count, 0, "sequences not strictly increasing, first at \(String(describing: disorder.first))")
    }

    func waitFor(seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = monotonicMs() + Int(seconds * 1000)
        while monotonicMs() < deadline {
            if condition() { return true }
            usleep(2000)
        }
        return condition()
    }
}
