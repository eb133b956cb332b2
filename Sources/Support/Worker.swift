/// A first-in, first-out queue with amortised O(1) removal at the front (the standard library
/// has no deque). Not thread-safe: its owner locks around it.
public struct FIFO<Element> {
    private var items: [Element] = []
    private var head = 0

    public init() {}

    public var isEmpty: Bool { head == items.count }
    public var count: Int { items.count - head }

    public mutating func append(_ e: Element) { items.append(e) }

    public var first: Element? { head < items.count ? items[head] : nil }

    public func contains(where matches: (Element) -> Bool) -> Bool { items[head...].contains(where: matches) }
    public func first(where matches: (Element) -> Bool) -> Element? { items[head...].first(where: matches) }
    public func last(where matches: (Element) -> Bool) -> Element? { items[head...].last(where: matches) }

    /// Changes each element in place, in order.
    public mutating func updateEach(_ body: (inout Element) -> Void) {
        for i in head..<items.count { body(&items[i]) }
    }

    public mutating func removeAll() {
        items.removeAll()
        head = 0
    }

    public mutating func popFirst() -> Element? {
        guard head < items.count else { return nil }
        let e = items[head]
        head += 1
        // Reclaim the consumed front once it is at least half of the storage.
        if head >= 64 && head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return e
    }
}

/// A named thread that runs submitted jobs one at a time, in order. Sleeps on a condition
/// variable while there is nothing to do (no polling).
public final class SerialWorker: @unchecked Sendable {
    private let monitor = Monitor()
    private var jobs = FIFO<@Sendable () -> Void>()  // guarded by monitor

    public init(name: String) {
        startThread(name: name) { [self] in
            while true {
                let job = monitor.withLock { () -> @Sendable () -> Void in
                    while true {
                        if let job = jobs.popFirst() { return job }
                        monitor.wait(deadlineMs: nil)
                    }
                }
                job()
            }
        }
    }

    public func submit(_ job: @escaping @Sendable () -> Void) {
        monitor.withLock { jobs.append(job) }
        monitor.broadcast()
    }

}

/// A named thread that hands each submitted input, in the order submitted, to `handle`, and
/// calls `due` once the deadline set with `wake(atMs:)` has passed. In between it sleeps on a
/// condition variable until the next input or that deadline: no ticking.
///
/// Bounded: a producer that can wait (a socket reader: its peer then waits too) waits while three
/// quarters of `capacity` inputs are queued; one that must not wait (the D-Bus thread) is refused
/// beyond `capacity`. So no flood, from the server or from the bus, grows memory without limit. Inputs that
/// are rare by nature and must not be lost (a stream status, a reload) are always taken.
///
/// The bridge's state runner: every input that changes the state passes through one of these,
/// so the state has a single writer and inputs are reduced in the order they happened.
public final class InputLoop<Input: Sendable>: @unchecked Sendable {
    public let capacity: Int
    private let monitor = Monitor()
    private var inputs = FIFO<Input>()  // guarded by monitor
    private var deadlineMs: Int? = nil  // guarded by monitor

    /// `handle` and `due` run on the loop's own thread, never concurrently.
    public init(name: String, capacity: Int = 1024, handle: @escaping @Sendable (Input) -> Void,
                due: @escaping @Sendable () -> Void) {
        self.capacity = max(1, capacity)
        startThread(name: name) { [self] in
            while true {
                let next = monitor.withLock { () -> Input? in
                    while true {
                        if let input = inputs.popFirst() {
                            monitor.broadcast()  // room for a waiting producer
                            return input
                        }
                        if let d = deadlineMs {
                            if monotonicMs() >= d {
                                deadlineMs = nil
                                return nil
                            }
                            monitor.wait(deadlineMs: d)
                        } else {
                            monitor.wait(deadlineMs: nil)
                        }
                    }
                }
                if let next { handle(next) } else { due() }
            }
        }
    }

    /// How a producer is admitted when `capacity` inputs are queued.
    public enum Admission: Sendable {
        /// Wait for room. Never from the loop's own thread, nor while holding a lock it takes.
        case wait
        /// Refused (the call returns false).
        case refuse
        /// Taken all the same: for inputs that are few by nature.
        case always
    }

    /// Queues `input`; false when it was refused.
    @discardableResult
    public func submit(_ input: Input, whenFull admission: Admission = .refuse) -> Bool {
        let taken = monitor.withLock { () -> Bool in
            switch admission {
            // A quarter stays free of waiting producers: a burst of events, which refills the
            // queue the moment a slot frees, must not crowd out a refusable input (a media key).
            case .wait: while inputs.count >= capacity - capacity / 4 { monitor.wait(deadlineMs: nil) }
            case .refuse: if inputs.count >= capacity { return false }
            case .always: break
            }
            inputs.append(input)
            return true
        }
        if taken { monitor.broadcast() }
        return taken
    }

    /// Calls `due` once `atMs` (monotonic) has passed; nil cancels. Replaces any earlier deadline.
    public func wake(atMs: Int?) {
        monitor.withLock { deadlineMs = atMs }
        monitor.broadcast()
    }
}

extension FIFO: Sendable where Element: Sendable {}
