import Support

/// A bounded FIFO of bytes between the network thread (producer) and the decoder thread
/// (consumer). The producer blocks while it is full, so memory stays bounded whatever the
/// network does; either side can end it. Thread-safe.
public final class ByteRing: @unchecked Sendable {
    public enum ReadResult: Equatable { case bytes(Int), timedOut, ended }

    public let capacity: Int
    private let monitor = Monitor()
    private var storage: [UInt8]
    private var head = 0
    private var count = 0
    private var producerDone = false
    private var cancelled = false
    /// When each stretch of bytes arrived: (bytes written in all once it was in, monotonic ms),
    /// oldest first from `arrivalsHead`; kept until the reader is past it.
    private var arrivals: [(end: Int, ms: Int)] = []
    private var arrivalsHead = 0
    private var bytesWritten = 0
    private var bytesRead = 0
    private var _lastReadArrivalMs = 0
    /// Wakes a reader that waits elsewhere than on this ring's lock (`tryRead`).
    private let wake: (@Sendable () -> Void)?
    private var readerWaits = false

    /// When the last byte that `read` returned arrived (monotonic ms): how old the data the
    /// reader has is, whatever waited in between.
    public var lastReadArrivalMs: Int { monitor.withLock { _lastReadArrivalMs } }

    /// `wake`: called (at most once per wait) when a reader that found nothing (`tryRead`) has
    /// something to read, and on `cancel`.
    public init(capacity: Int, wake: (@Sendable () -> Void)? = nil) {
        self.capacity = capacity
        self.wake = wake
        storage = [UInt8](repeating: 0, count: capacity)
    }

    public var fill: Int { monitor.withLock { count } }

    /// Appends all of `bytes`, waiting for room. False when the ring was cancelled.
    public func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        return monitor.withLock {
            while offset < bytes.count {
                while count == capacity && !cancelled { monitor.wait(deadlineMs: nil) }
                if cancelled { return false }
                let tail = (head + count) % capacity
                let n = min(bytes.count - offset, capacity - count, capacity - tail)
                storage.withUnsafeMutableBytes { dst in
                    dst.baseAddress!.advanced(by: tail).copyMemory(from: bytes.baseAddress!.advanced(by: offset), byteCount: n)
                }
                count += n
                offset += n
                let now = monotonicMs()
                bytesWritten += n
                if arrivalsHead < arrivals.count, arrivals[arrivals.count - 1].ms == now {
                    arrivals[arrivals.count - 1].end = bytesWritten
                } else {
                    arrivals.append((bytesWritten, now))
                }
                monitor.broadcast()
                wakeReaderLocked()
            }
            return true
        }
    }

    /// Reads up to `into.count` bytes, waiting on this ring's lock until `deadlineMs` (nil:
    /// forever) for some. `oneArrival`: no more than the bytes that arrived with the first
    /// (`lastReadArrivalMs` is then when every byte read arrived, not only the last).
    public func read(into: UnsafeMutableRawBufferPointer, deadlineMs: Int? = nil, oneArrival: Bool = false) -> ReadResult {
        monitor.withLock {
            while count == 0 && !producerDone && !cancelled {
                if !monitor.wait(deadlineMs: deadlineMs) && count == 0 { return .timedOut }
            }
            return takeLocked(into: into, oneArrival: oneArrival)
        }
    }

    public enum TryRead: Equatable {
        /// This many bytes, all of which arrived at once, then.
        case bytes(Int, arrival: Instant)
        /// None yet: `wake` is called when some come (or the ring ends).
        case empty
        case ended
    }

    /// What arrived together next, without waiting (the decoder waits in its own loop).
    public func tryRead(into: UnsafeMutableRawBufferPointer) -> TryRead {
        monitor.withLock {
            guard count > 0 || producerDone || cancelled else {
                readerWaits = true
                return .empty
            }
            guard case .bytes(let n) = takeLocked(into: into, oneArrival: true) else { return .ended }
            return .bytes(n, arrival: Instant(ms: _lastReadArrivalMs))
        }
    }

    private func wakeReaderLocked() {
        guard readerWaits else { return }
        readerWaits = false
        wake?()
    }

    private func takeLocked(into: UnsafeMutableRawBufferPointer, oneArrival: Bool) -> ReadResult {
        if cancelled || count == 0 { return .ended }
        var n = min(into.count, count, capacity - head)
        if oneArrival, let first = arrivals[arrivalsHead...].first(where: { $0.end > bytesRead }) {
            n = min(n, first.end - bytesRead)
        }
        storage.withUnsafeBytes { src in
            into.baseAddress!.copyMemory(from: src.baseAddress!.advanced(by: head), byteCount: n)
        }
        head = (head + n) % capacity
        count -= n
        bytesRead += n
        while arrivalsHead < arrivals.count - 1 && arrivals[arrivalsHead].end < bytesRead { arrivalsHead += 1 }
        if arrivalsHead < arrivals.count { _lastReadArrivalMs = arrivals[arrivalsHead].ms }
        if arrivalsHead >= 256 && arrivalsHead * 2 >= arrivals.count {
            arrivals.removeFirst(arrivalsHead)
            arrivalsHead = 0
        }
        monitor.broadcast()
        return .bytes(n)
    }

    /// The producer is done: the consumer gets what is left, then `.ended`.
    public func finish() { monitor.withLock { producerDone = true; monitor.broadcast(); wakeReaderLocked() } }

    /// Ends both sides now; buffered bytes are dropped. Wakes the reader wherever it waits (the
    /// decoder may wait for the sound server, not for bytes).
    public func cancel() {
        monitor.withLock { cancelled = true; count = 0; monitor.broadcast() }
        wake?()
    }

    public var isCancelled: Bool { monitor.withLock { cancelled } }
}
