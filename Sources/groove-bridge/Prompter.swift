@preconcurrency import Glibc

/// Questions on the controlling terminal (/dev/tty), so that standard input and output stay free
/// for scripts. A secret is read with echo off; an interrupt while it is off turns echo back on
/// as the process ends (a terminal left silent would look broken).
final class Prompter {
    private let fd: Int32

    private init(fd: Int32) { self.fd = fd }

    deinit { close(fd) }

    /// The terminal, or nil when there is none (a service, a pipe).
    static func open() -> Prompter? {
        let fd = Glibc.open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY)
        return fd < 0 ? nil : Prompter(fd: fd)
    }

    /// Asks and returns the answer without its line end and surrounding spaces.
    func line(_ question: String) -> String {
        say(question)
        return readLine(from: fd).trimmingBlanks()
    }

    /// Asks with echo off; the answer is kept exactly as typed. Echo goes off ahead of the
    /// question, so that nothing typed on seeing it can be echoed; what is typed ahead
    /// stays (TCSANOW, not TCSAFLUSH, which would drop it and leave the reader waiting).
    func secret(_ question: String) -> String {
        var t = termios()
        guard tcgetattr(fd, &t) == 0 else {
            say(question)
            return readLine(from: fd)
        }
        Prompter.saved = (fd, t)
        let restore: @convention(c) (Int32) -> Void = { sig in
            if let (fd, t) = Prompter.saved { var t = t; tcsetattr(fd, TCSANOW, &t) }
            signal(sig, SIG_DFL)
            raise(sig)
        }
        for s in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP] { signal(s, restore) }
        var quiet = t
        quiet.c_lflag &= ~tcflag_t(ECHO)
        quiet.c_lflag |= tcflag_t(ECHONL)
        tcsetattr(fd, TCSANOW, &quiet)
        say(question)
        let answer = readLine(from: fd)
        tcsetattr(fd, TCSANOW, &t)
        for s in [SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP] { signal(s, SIG_DFL) }
        Prompter.saved = nil
        return answer
    }

    /// The terminal and its settings while echo is off, for the signal handler.
    nonisolated(unsafe) private static var saved: (Int32, termios)?

    private func say(_ text: String) {
        _ = text.withCString { Glibc.write(fd, $0, strlen($0)) }
    }
}

/// One line from `fd` (at most 4 KiB), without its line end.
func readLine(from fd: Int32) -> String {
    var bytes: [UInt8] = []
    var c: UInt8 = 0
    while bytes.count < 4096 {
        let n = read(fd, &c, 1)
        if n < 0 && errno == EINTR { continue }
        if n <= 0 || c == UInt8(ascii: "\n") { break }
        bytes.append(c)
    }
    if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
    return String(decoding: bytes, as: UTF8.self)
}

extension String {
    func trimmingBlanks() -> String {
        String(drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
