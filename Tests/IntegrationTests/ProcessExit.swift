import Foundation
import Support

extension Process {
    /// How the process ended (`exited`: by exit, with `code`; else by the signal `code`), waited
    /// for at most `timeoutS`: nil if it still runs then. Foundation's own account, as
    /// `waitUntilExit` gives it; but Foundation can miss a child's exit on Linux (the child stays
    /// a zombie and `waitUntilExit` never returns: a test hung so), so a child that has been a
    /// zombie for `zombieS` (Foundation reaps its children within milliseconds) is taken as
    /// ended, its status read from `/proc/PID/stat`. Never reaped here: a pid reaped under
    /// Foundation could be reused by its next child.
    func waitForExit(timeoutS: Double = 30, zombieS: Double = 2) -> (exited: Bool, code: Int32)? {
        let end = monotonicUs() + Int64(timeoutS * 1_000_000)
        var zombieSinceUs: Int64? = nil
        while true {
            if !isRunning {
                // Returns at once, and lets go of what Foundation kept to watch the process (its
                // descriptors: Process.run crashed once some 1 350 were left open).
                waitUntilExit()
                return (terminationReason == .exit, terminationStatus)
            }
            let now = monotonicUs()
            if let status = Self.zombieStatus(processIdentifier) {
                let since = zombieSinceUs ?? now
                zombieSinceUs = since
                if now - since >= Int64(zombieS * 1_000_000) {
                    let signal = status & 0x7f
                    return signal == 0 ? (true, (status >> 8) & 0xff) : (false, signal)
                }
            }
            if now > end { return nil }
            usleep(5_000)
        }
    }

    /// The wait status of `pid` if it has exited and waits to be reaped: state Z, and field 52
    /// of `/proc/PID/stat` (`exit_code`, as waitpid reports it; Linux 3.5 and later).
    static func zombieStatus(_ pid: pid_t) -> Int32? {
        guard pid > 0, let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        // Fields from the third (the state) on, after the command's name in parentheses.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.first == "Z", fields.count >= 50, let code = Int32(fields[49].trimmingCharacters(in: .whitespacesAndNewlines)) else { return nil }
        return code
    }
}
