import CPulse
import Support
import Synchronization

/// The decoder thread's one place to wait: libpulse's `pa_mainloop`, run by hand
/// (prepare/poll/dispatch) whenever the decoder has nothing to do — no bytes in the ring, no room
/// in the sound server's buffer, no connection. The sound server's messages (requests for data,
/// timing replies, the stream moved or killed) are handled there, so libpulse needs no thread of
/// its own (pa_simple's `threaded-ml`). Other threads wake it through `wake()`: a new
/// connection, bytes for a waiting reader, a pause. Idle, it sleeps in poll(2) with no timeout.
///
/// Thread-safe: `wake()` only (pa_mainloop_wakeup writes to the loop's own pipe); everything
/// else belongs to the decoder thread.
final class AudioLoop: @unchecked Sendable {
    let mainloop: OpaquePointer
    /// A `wake()` came since the last `wait` looked: pa_mainloop_prepare empties the wake-up pipe
    /// before it polls, so one written just before would be lost without this.
    private let woken = Atomic<Bool>(false)

    init() { mainloop = pa_mainloop_new() }

    /// Only after every context made on `api` is freed (the player, which owns the loop, lives
    /// as long as its threads).
    deinit { pa_mainloop_free(mainloop) }

    /// For pa_context_new: libpulse's sockets and timers go through this loop.
    var api: UnsafeMutablePointer<pa_mainloop_api> { pa_mainloop_get_api(mainloop) }

    /// Ends the current or next `wait` early. Callers wait in a loop on their own condition, so a
    /// wake-up with nothing for them is harmless.
    func wake() {
        woken.store(true, ordering: .sequentiallyConsistent)
        pa_mainloop_wakeup(mainloop)
    }

    /// Handles the sound server's messages until one arrived, `wake()` was called, or
    /// `deadlineMs` (monotonic; nil: no deadline) passed.
    func wait(deadlineMs: Int?) {
        // pa_mainloop_prepare takes µs; -1 is "no timeout".
        let timeoutUs = deadlineMs.map { Int32(clamping: max(0, $0 - monotonicMs()) * 1000) } ?? -1
        guard pa_mainloop_prepare(mainloop, timeoutUs) >= 0 else { return }
        // A wake-up the preparation swallowed: the poll returns at once.
        if woken.exchange(false, ordering: .sequentiallyConsistent) { pa_mainloop_wakeup(mainloop) }
        _ = pa_mainloop_poll(mainloop)
        _ = pa_mainloop_dispatch(mainloop)
    }

    /// Sends what libpulse queued (a cork, a flush, a write: its socket writes are deferred to
    /// the loop) and handles what already arrived, without waiting.
    func runPending() { _ = pa_mainloop_iterate(mainloop, 0, nil) }
}
