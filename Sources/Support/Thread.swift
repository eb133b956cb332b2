import CSupport
import Glibc

/// Starts a detached, named OS thread running `body`. Threads here are few and long-lived (the
/// D-Bus loop, the WebSocket reader, the stream reader, the decoder), each with one job, so a
/// plain pthread with a visible name (`top -H`, `/proc/PID/task/*/comm`) fits better than a pool.
public func startThread(name: String, _ body: @escaping @Sendable () -> Void) {
    final class Box: @unchecked Sendable {
        let name: String
        let body: @Sendable () -> Void
        init(_ name: String, _ body: @escaping @Sendable () -> Void) { self.name = name; self.body = body }
    }
    let box = Unmanaged.passRetained(Box(name, body))
    var tid = pthread_t()
    let rc = pthread_create(&tid, nil, { arg in
        let box = Unmanaged<AnyObject>.fromOpaque(arg!).takeRetainedValue()
        let b = unsafeDowncast(box, to: Box.self)
        // Linux limits thread names to 15 bytes.
        gb_set_thread_name(b.name)
        b.body()
        return nil
    }, box.toOpaque())
    if rc != 0 {
        box.release()
        Log.error("cannot start thread \(name): \(String(cString: strerror(rc)))")
        return
    }
    pthread_detach(tid)
}

/// Milliseconds on the monotonic clock.
public func monotonicMs() -> Int {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000
}

/// Microseconds on the monotonic clock.
public func monotonicUs() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec / 1000)
}

/// An eventfd that other threads signal to wake a thread blocked in poll(2) on it.
public final class WakeFD: Sendable {
    public let fd: Int32

    public init() { fd = gb_eventfd() }
    deinit { close(fd) }

    public func signal() {
        var one: UInt64 = 1
        _ = write(fd, &one, 8)
    }

    /// Clears the pending wake-ups; returns whether there were any.
    @discardableResult
    public func drain() -> Bool {
        var v: UInt64 = 0
        return read(fd, &v, 8) == 8
    }
}

/// The full path of an executable on PATH, or nil.
public func findExecutable(_ name: String) -> String? {
    let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/bin:/bin"
    for dir in path.split(separator: ":") {
        let candidate = "\(dir)/\(name)"
        if access(candidate, X_OK) == 0 { return candidate }
    }
    return nil
}
