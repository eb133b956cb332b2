import CDBus
import Glibc
import Support
import Synchronization

public struct DBusFailure: Error, CustomStringConvertible, Sendable {
    public let name: String
    public let message: String
    public var description: String { "\(message) (\(name))" }

    init(_ err: inout CDBus.DBusError, fallback: String) {
        if dbus_error_is_set(&err) != 0 {
            name = err.name.map { String(cString: $0) } ?? "unknown"
            message = err.message.map { String(cString: $0) } ?? fallback
            dbus_error_free(&err)
        } else {
            name = "org.freedesktop.DBus.Error.Failed"
            message = fallback
        }
    }

    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }
}

/// One incoming method call, already unmarshalled.
public struct MethodCall: Sendable {
    public let path: String
    public let interface: String?
    public let member: String
    public let sender: String?
    public let signature: String
    public let args: [DBusValue]

    public init(path: String, interface: String?, member: String, sender: String?, signature: String, args: [DBusValue]) {
        self.path = path; self.interface = interface; self.member = member
        self.sender = sender; self.signature = signature; self.args = args
    }
}

public enum MethodReply: Sendable {
    case values([DBusValue])
    case error(name: String, message: String)

    public static let empty = MethodReply.values([])

    public static func invalidArgs(_ message: String) -> MethodReply {
        .error(name: "org.freedesktop.DBus.Error.InvalidArgs", message: message)
    }
}

/// Handles calls to one object path. Called on the D-Bus thread: must not block.
public protocol DBusObject: AnyObject, Sendable {
    func handle(_ call: MethodCall) -> MethodReply
}

public enum NameRequest: Equatable, Sendable {
    case primaryOwner
    case taken
}

/// A private connection to a message bus and the thread ("dbus") that owns it.
///
/// Every libdbus call after `start()` runs on that thread: it sleeps in poll(2) on the bus socket
/// and an eventfd, with no timeout, so an idle connection costs no wakeups. Other threads hand it
/// work with `post`, which is how signals are emitted.
public final class DBusConnection: @unchecked Sendable {
    // The connection pointer is used by the creating thread until start(), then only by "dbus".
    private let conn: OpaquePointer
    var connectionPointer: OpaquePointer { conn }
    private let wake = WakeFD()
    private let jobs = Mutex<[@Sendable (DBusConnection) -> Void]>([])
    private let objects = Mutex<[String: DBusObject]>([:])
    private let running = Atomic<Bool>(false)
    private let finished = Monitor()
    nonisolated(unsafe) private var threadDone = false  // guarded by `finished`
    public let uniqueName: String

    /// Which of the user's buses to connect to when no address is given.
    public enum Bus: Sendable {
        /// `DBUS_SESSION_BUS_ADDRESS`
        case session
        /// `DBUS_SYSTEM_BUS_ADDRESS`, else the system's socket (logind, NetworkManager).
        case system
    }

    /// Connects to the bus at `address` (nil: `bus`, the session bus by default).
    public init(address: String? = nil, bus: Bus = .session) throws(DBusFailure) {
        _ = dbus_threads_init_default()
        var err = CDBus.DBusError()
        dbus_error_init(&err)
        let c: OpaquePointer?
        if let address {
            c = dbus_connection_open_private(address, &err)
            if let c, dbus_bus_register(c, &err) == 0 {
                dbus_connection_close(c)
                dbus_connection_unref(c)
                throw DBusFailure(&err, fallback: "cannot register on the bus at \(address)")
            }
        } else {
            c = dbus_bus_get_private(bus == .system ? DBUS_BUS_SYSTEM : DBUS_BUS_SESSION, &err)
        }
        guard let c else { throw DBusFailure(&err, fallback: "cannot connect to the \(bus) bus") }
        // libdbus would otherwise call _exit() when the bus goes away.
        dbus_connection_set_exit_on_disconnect(c, 0)
        conn = c
        uniqueName = dbus_bus_get_unique_name(c).map { String(cString: $0) } ?? ""
    }

    deinit {
        dbus_connection_close(conn)
        dbus_connection_unref(conn)
    }

    /// Asks for a well-known name without queueing. Call before `start()`.
    public func requestName(_ name: String) throws(DBusFailure) -> NameRequest {
        var err = CDBus.DBusError()
        dbus_error_init(&err)
        let rc = dbus_bus_request_name(conn, name, UInt32(DBUS_NAME_FLAG_DO_NOT_QUEUE), &err)
        if rc < 0 { throw DBusFailure(&err, fallback: "cannot request the name \(name)") }
        // Any other reply (EXISTS: another connection owns it) means taken.
        return rc == DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER || rc == DBUS_REQUEST_NAME_REPLY_ALREADY_OWNER
            ? .primaryOwner : .taken
    }

    public func register(path: String, object: DBusObject) {
        objects.withLock { $0[path] = object }
    }

    /// Runs `job` on the D-Bus thread soon. Safe from any thread.
    public func post(_ job: @escaping @Sendable (DBusConnection) -> Void) {
        jobs.withLock { $0.append(job) }
        wake.signal()
    }

    /// Emits a signal. Call on the D-Bus thread (inside `post`).
    public func emitSignal(path: String, interface: String, member: String, args: [DBusValue]) {
        guard let msg = dbus_message_new_signal(path, interface, member) else { return }
        defer { dbus_message_unref(msg) }
        Marshal.append(args, to: msg)
        _ = dbus_connection_send(conn, msg, nil)
    }

    /// Starts the "dbus" thread. `onDisconnect` runs on it when the bus goes away.
    public func start(onDisconnect: @escaping @Sendable () -> Void) {
        guard !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let box = Unmanaged.passUnretained(self).toOpaque()
        _ = dbus_connection_add_filter(conn, { _, msg, user in
            guard let msg, let user else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
            return Unmanaged<DBusConnection>.fromOpaque(user).takeUnretainedValue().filter(msg)
        }, box, nil)
        startThread(name: "dbus") { [self] in
            loop()
            // Closing here releases the bus names now, whoever still holds this object.
            dbus_connection_close(conn)
            finished.withLock { threadDone = true }
            finished.broadcast()
            onDisconnect()
        }
    }

    /// Stops the thread after it finishes what it is doing (queued replies and signals are still
    /// sent). With `waitMs`, waits up to that long for it to finish: before the process exits,
    /// so that the reply to a Quit reaches its caller.
    public func stop(waitMs: Int = 0) {
        running.store(false, ordering: .releasing)
        wake.signal()
        guard waitMs > 0 else { return }
        let deadline = monotonicMs() + waitMs
        finished.withLock {
            while !threadDone { if !finished.wait(deadlineMs: deadline) { break } }
        }
    }

    private func loop() {
        var fd: Int32 = -1
        _ = dbus_connection_get_unix_fd(conn, &fd)
        while true {
            while dbus_connection_dispatch(conn) == DBUS_DISPATCH_DATA_REMAINS {}
            let pending = jobs.withLock { j -> [@Sendable (DBusConnection) -> Void] in
                defer { j.removeAll() }
                return j
            }
            for job in pending { job(self) }
            dbus_connection_flush(conn)
            if dbus_connection_get_is_connected(conn) == 0 { return }
            if !running.load(ordering: .acquiring) { return }
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: wake.fd, events: Int16(POLLIN), revents: 0)]
            let n = poll(&fds, 2, -1)
            if n < 0 && errno != EINTR { return }
            if fds[1].revents != 0 { wake.drain() }
            if fds[0].revents != 0 {
                // Reads what arrived (and writes anything queued); returns false once disconnected.
                if dbus_connection_read_write(conn, 0) == 0 { return }
            }
        }
    }

    /// Called by libdbus during dispatch, on the D-Bus thread.
    private func filter(_ msg: OpaquePointer) -> DBusHandlerResult {
        guard dbus_message_get_type(msg) == DBUS_MESSAGE_TYPE_METHOD_CALL else {
            return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
        }
        let path = dbus_message_get_path(msg).map { String(cString: $0) } ?? ""
        guard let object = objects.withLock({ $0[path] }) else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
        let call = MethodCall(
            path: path,
            interface: dbus_message_get_interface(msg).map { String(cString: $0) },
            member: dbus_message_get_member(msg).map { String(cString: $0) } ?? "",
            sender: dbus_message_get_sender(msg).map { String(cString: $0) },
            signature: dbus_message_get_signature(msg).map { String(cString: $0) } ?? "",
            args: Marshal.read(msg))
        let reply: OpaquePointer?
        switch object.handle(call) {
        case .values(let values):
            reply = dbus_message_new_method_return(msg)
            if let reply { Marshal.append(values, to: reply) }
        case .error(let name, let message):
            reply = dbus_message_new_error(msg, name, message)
        }
        if let reply {
            if dbus_message_get_no_reply(msg) == 0 { _ = dbus_connection_send(conn, reply, nil) }
            dbus_message_unref(reply)
        }
        return DBUS_HANDLER_RESULT_HANDLED
    }
}
