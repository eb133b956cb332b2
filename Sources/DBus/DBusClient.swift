import CDBus
import Support

/// A signal received by a client connection.
public struct ReceivedSignal: Sendable {
    public let path: String
    public let interface: String
    public let member: String
    public let sender: String?
    public let args: [DBusValue]
    /// Monotonic µs when it was read off the socket.
    public let receivedUs: Int64
}

// Client use: a connection that is not `start()`ed, driven by the calling thread.
extension DBusConnection {
    /// Calls a method and waits for the reply. Only on a connection that was not started.
    /// `interface` nil sends the call without one (D-Bus allows it; the receiver looks the member up).
    public func call(destination: String, path: String, interface: String?, member: String,
                     args: [DBusValue] = [], timeoutMs: Int32 = 5000) throws(DBusFailure) -> [DBusValue]
    {
        guard let msg = dbus_message_new_method_call(destination, path, interface, member) else {
            throw DBusFailure(name: "org.freedesktop.DBus.Error.NoMemory", message: "cannot build the call")
        }
        defer { dbus_message_unref(msg) }
        Marshal.append(args, to: msg)
        var err = CDBus.DBusError()
        dbus_error_init(&err)
        guard let reply = dbus_connection_send_with_reply_and_block(connectionPointer, msg, timeoutMs, &err) else {
            throw DBusFailure(&err, fallback: "\(member) on \(destination) failed")
        }
        defer { dbus_message_unref(reply) }
        return Marshal.read(reply)
    }

    /// Subscribes to signals matching `rule` (e.g. "type='signal',sender='…'").
    public func addMatch(_ rule: String) throws(DBusFailure) {
        var err = CDBus.DBusError()
        dbus_error_init(&err)
        dbus_bus_add_match(connectionPointer, rule, &err)
        if dbus_error_is_set(&err) != 0 { throw DBusFailure(&err, fallback: "bad match rule") }
    }

    /// The next signal within `timeoutMs` (nil: however long it takes, asleep in poll(2)), or
    /// nil when none came or the bus went away. Other messages, and the bus daemon's own signals
    /// to this connection (NameAcquired, NameLost), are dropped.
    public func nextSignal(timeoutMs: Int?) -> ReceivedSignal? {
        let deadline = timeoutMs.map { monotonicMs().adding(saturating: $0) }
        while true {
            if let msg = dbus_connection_pop_message(connectionPointer) {
                defer { dbus_message_unref(msg) }
                let fromBus = dbus_message_get_sender(msg).map { String(cString: $0) } == "org.freedesktop.DBus"
                if dbus_message_get_type(msg) == DBUS_MESSAGE_TYPE_SIGNAL && !fromBus {
                    return ReceivedSignal(
                        path: dbus_message_get_path(msg).map { String(cString: $0) } ?? "",
                        interface: dbus_message_get_interface(msg).map { String(cString: $0) } ?? "",
                        member: dbus_message_get_member(msg).map { String(cString: $0) } ?? "",
                        sender: dbus_message_get_sender(msg).map { String(cString: $0) },
                        args: Marshal.read(msg), receivedUs: monotonicUs())
                }
                continue
            }
            var wait: Int32 = -1
            if let deadline {
                let left = deadline - monotonicMs()
                if left <= 0 { return nil }
                wait = Int32(clamping: left)
            }
            if dbus_connection_read_write(connectionPointer, wait) == 0 { return nil }
        }
    }

    /// The unique name that owns `name` now, or nil.
    public func owner(of name: String) -> String? {
        let r = try? call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                          interface: "org.freedesktop.DBus", member: "GetNameOwner", args: [.string(name)])
        return r?.first?.stringValue
    }
}
