import Foundation
import Support

extension Process {
    /// How the process ended (`exited`: by exit, with `code`; else by the signal `code`), waited
    /// for at most `timeoutS`: nil if it still runs then. Foundation's own account when it has
    /// one; Foundation can miss a child's exit on Linux (the child stays a zombie and
    /// `waitUntilExit` never returns: a test hung so), so a zombie's status is read from
    /// `/proc/PID/stat`. Never reaped here: Foundation reaps its own children, and a pid reaped
    /// under it could be reused by its next child.
    func waitForExit(timeoutS: Double = 30) -> (exited: Bool, code: Int32)? {
        let end = monotonicUs() + Int64(timeoutS * 1_000_000)
        while true {
            if !isRunning { return (terminationReason == .exit, terminationStatus) }
            if let status = Self.zombieStatus(processIdentifier) {
                let signal = status & 0x7f
                return signal == 0 ? (true, (status >> 8) & 0xff) : (false, signal)
            }
            if monotonicUs() > end { return nil }
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
