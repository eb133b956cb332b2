import Glibc

/// A mutex with one condition variable on the monotonic clock: the building block for the
/// blocking hand-offs between threads (byte ring, worker queues).
public final class Monitor: @unchecked Sendable {
    // pthreads needs the mutex and the condition at one address for their whole life; a class's
    // stored property passed with `&` is only guaranteed an address for the length of the call.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let cond = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    public init() {
        var attr = pthread_condattr_t()
        pthread_condattr_init(&attr)
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)
        pthread_cond_init(cond, &attr)
        pthread_condattr_destroy(&attr)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_cond_destroy(cond)
        pthread_mutex_destroy(mutex)
        cond.deallocate()
        mutex.deallocate()
    }

    public func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Waits (lock held) until signalled or `deadlineMs` (monotonic) passes; nil waits forever.
    /// Returns false on timeout.
    @discardableResult
    public func wait(deadlineMs: Int?) -> Bool {
        guard let deadlineMs else {
            pthread_cond_wait(cond, mutex)
            return true
        }
        var ts = timespec(tv_sec: deadlineMs / 1000, tv_nsec: (deadlineMs % 1000) * 1_000_000)
        return pthread_cond_timedwait(cond, mutex, &ts) != ETIMEDOUT
    }

    /// Wakes every waiter; call with or without the lock held.
    public func broadcast() { pthread_cond_broadcast(cond) }
}
