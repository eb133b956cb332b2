import CSupport
@preconcurrency import Glibc

/// Child processes (xdg-open for Raise, the password command) get nothing of this process that
/// they should not have: `gb_spawn_clean` starts them with an empty signal mask, default signal
/// actions and only fds 0–2, and `childEnvironment` leaves out what the bridge holds for itself.
/// posix_spawn is safe in a threaded process, unlike fork without exec.
public enum Spawn {
    /// This process's environment without the password (`GROOVE_PASSWORD`) and the properties
    /// of our own PulseAudio stream (`PULSE_PROP_*`, set for PulseSink: a browser started for
    /// Raise must not play as Groove Audio).
    public static func childEnvironment() -> [String] {
        var out: [String] = []
        var p = environ
        while let entry = p.pointee {
            let s = String(cString: entry)
            if !s.hasPrefix("GROOVE_PASSWORD=") && !s.hasPrefix("PULSE_PROP_") { out.append(s) }
            p += 1
        }
        return out
    }

    /// Starts `argv` (argv[0] a path); returns its pid or why it could not start.
    static func start(_ argv: [String], stdout: Int32 = -1, ownGroup: Bool = false) -> Result<pid_t, SpawnError> {
        var pid: pid_t = 0
        var cargs = argv.map { strdup($0) } + [nil]
        var cenv = childEnvironment().map { strdup($0) } + [nil]
        defer {
            for a in cargs { free(a) }
            for e in cenv { free(e) }
        }
        let rc = gb_spawn_clean(&pid, argv[0], &cargs, &cenv, stdout, ownGroup ? 1 : 0)
        guard rc == 0 else { return .failure(SpawnError(message: "cannot start \(argv[0]): \(String(cString: strerror(rc)))")) }
        return .success(pid)
    }
}

public struct SpawnError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public var description: String { message }
}

/// Starts a program and does not wait for it (e.g. xdg-open).
public func spawnDetached(_ argv: [String]) {
    switch Spawn.start(argv) {
    case .failure(let e): Log.warning(e.message)
    case .success(let child):
        // Reap it in the background so it does not stay a zombie.
        startThread(name: "reaper") {
            var status: Int32 = 0
            waitpid(child, &status, 0)
        }
    }
}

/// How a command that was waited for ended.
public struct CommandResult: Sendable {
    public enum End: Sendable, Equatable {
        case exited(Int32)
        case killedBy(signal: Int32)
        /// Still running at the deadline: its whole process group was killed.
        case timedOut
    }
    public let end: End
    /// What it wrote to stdout, up to the caller's limit (the rest is read and dropped).
    public let output: [UInt8]
}

/// Runs `argv` (argv[0] a path) with stdout captured and waits for it, for at most `timeoutMs`:
/// then it and whatever it started in its process group are killed. Waits in poll(2) on the
/// pipe and a pidfd of the child, so a command that never ends costs no busy loop and cannot
/// hold its caller longer than the timeout.
public func runCommand(_ argv: [String], timeoutMs: Int, outputLimit: Int) -> Result<CommandResult, SpawnError> {
    var fds: [Int32] = [-1, -1]
    guard gb_pipe_cloexec(&fds) == 0 else {
        return .failure(SpawnError(message: "cannot make a pipe: \(String(cString: strerror(errno)))"))
    }
    let pid: pid_t
    switch Spawn.start(argv, stdout: fds[1], ownGroup: true) {
    case .failure(let e):
        close(fds[0]); close(fds[1])
        return .failure(e)
    case .success(let p): pid = p
    }
    close(fds[1])
    defer { close(fds[0]) }
    // Without a pidfd (a kernel before 5.3) the exit is looked for every 50 ms instead.
    let pidfd = gb_pidfd_open(pid)
    defer { if pidfd >= 0 { close(pidfd) } }

    let deadline = monotonicMs().adding(saturating: timeoutMs)
    var output: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    var pipeOpen = true
    var status: Int32 = 0
    /// Reads what the pipe holds; false once it is at its end.
    func readSome() -> Bool {
        let n = read(fds[0], &buffer, buffer.count)
        if n < 0 { return errno == EINTR || errno == EAGAIN }
        if n == 0 { return false }
        if output.count < outputLimit { output += buffer[0..<min(n, outputLimit - output.count)] }
        return true
    }
    while true {
        let reaped = waitpid(pid, &status, WNOHANG)
        if reaped == pid { break }
        if reaped < 0 && errno != EINTR {
            return .failure(SpawnError(message: "waitpid: \(String(cString: strerror(errno)))"))
        }
        let left = deadline - monotonicMs()
        if left <= 0 {
            kill(-pid, SIGKILL)
            waitpid(pid, &status, 0)
            return .success(CommandResult(end: .timedOut, output: output))
        }
        var polled = [pollfd(fd: pipeOpen ? fds[0] : -1, events: Int16(POLLIN), revents: 0),
                      pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)]
        if poll(&polled, 2, Int32(clamping: pidfd >= 0 ? left : min(left, 50))) < 0 && errno != EINTR {
            let why = String(cString: strerror(errno))
            kill(-pid, SIGKILL)
            waitpid(pid, &status, 0)
            return .failure(SpawnError(message: "poll: \(why)"))
        }
        if polled[0].revents != 0 { pipeOpen = readSome() }
    }
    // Exited: what it wrote is in the pipe. Something it left running may hold the pipe
    // open, so only what is there is read, without waiting for the pipe's end.
    while pipeOpen {
        var polled = [pollfd(fd: fds[0], events: Int16(POLLIN), revents: 0)]
        guard poll(&polled, 1, 0) > 0 else { break }
        pipeOpen = readSome()
    }
    let signal = status & 0x7F
    return .success(CommandResult(end: signal == 0 ? .exited((status >> 8) & 0xFF) : .killedBy(signal: signal),
                                  output: output))
}
