import Foundation
import XCTest

/// The playout decides and does nothing else: its files import no C module, Glibc or Foundation,
/// and hold no lock, thread, clock read or log call (the decoder thread does those with what it
/// decides). Read from the source, so that a change that breaks it fails here.
final class PlayoutPurityTests: XCTestCase {
    func testThePlayoutIsPure() throws {
        let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources/Audio")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix("Playout") && $0.hasSuffix(".swift") }
        XCTAssertGreaterThanOrEqual(files.count, 4)
        let forbidden = ["import Glibc", "import Foundation", "import CFLAC", "import CPulse", "import CCurl", "import CDBus",
                         "import Synchronization", "import Dispatch", "Mutex", "Monitor", "Atomic", "startThread", "monotonicMs",
                         "monotonicUs", "Instant.now", ".now", "Log.write", "Log.info", "Log.debug", "Log.warning", "Log.error",
                         "clock_gettime", "print("]
        for f in files {
            let text = try String(contentsOf: dir.appendingPathComponent(f), encoding: .utf8)
            let code = text.split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }.joined(separator: "\n")
            for word in forbidden { XCTAssertFalse(code.contains(word), "\(f) has \(word)") }
        }
    }
}
