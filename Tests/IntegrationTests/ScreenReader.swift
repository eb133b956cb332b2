import Foundation
import Support

/// Collects a process's output as it comes, so a test can wait for a prompt (which ends no line).
final class ScreenReader: @unchecked Sendable {
    /// Its condition waits on the monotonic clock.
    private let lock = Monitor()
    private var data = Data()
    private var ended = false

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            while true {
                let chunk = handle.availableData
                lock.withLock {
                    data.append(chunk)
                    if chunk.isEmpty { ended = true }
                }
                lock.broadcast()
                if chunk.isEmpty { return }
            }
        }
    }

    var text: String { lock.withLock { String(decoding: data, as: UTF8.self) } }

    /// Waits until the output ended (every writer closed it); false at the timeout.
    func waitForEnd(timeout: TimeInterval) -> Bool {
        let deadline = monotonicMs() + Int(timeout * 1000)
        return lock.withLock {
            while !ended {
                if !lock.wait(deadlineMs: deadline) && monotonicMs() >= deadline { return ended }
            }
            return true
        }
    }

    /// Waits until `s` is in the output past what earlier waits found.
    func wait(for s: String, timeout: TimeInterval) -> Bool {
        let deadline = monotonicMs() + Int(timeout * 1000)
        return lock.withLock {
            while true {
                let all = String(decoding: data, as: UTF8.self)
                if let r = all.range(of: s, range: all.index(all.startIndex, offsetBy: min(consumed, all.count))..<all.endIndex) {
                    consumed = all.distance(from: all.startIndex, to: r.upperBound)
                    return true
                }
                if !lock.wait(deadlineMs: deadline) && monotonicMs() >= deadline { return false }
            }
        }
    }
    private var consumed = 0
}
