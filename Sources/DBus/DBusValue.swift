import CDBus
import Support

/// A D-Bus value with its type. Covers every type MPRIS uses (`s o b i u x t d y as a{sv} v`)
/// and arrays/dicts/structs of them.
public indirect enum DBusValue: Equatable, Sendable {
    case byte(UInt8)
    case bool(Bool)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(ObjectPath)
    case signature(String)
    /// An array with its element signature (needed when it is empty).
    case array(element: String, [DBusValue])
    /// `a{kv}`: key and value signatures, entries in order.
    case dict(key: String, value: String, [(DBusValue, DBusValue)])
    case variant(DBusValue)
    case structure([DBusValue])

    public var signature: String {
        switch self {
        case .byte: return "y"
        case .bool: return "b"
        case .int32: return "i"
        case .uint32: return "u"
        case .int64: return "x"
        case .uint64: return "t"
        case .double: return "d"
        case .string: return "s"
        case .objectPath: return "o"
        case .signature: return "g"
        case .array(let e, _): return "a" + e
        case .dict(let k, let v, _): return "a{\(k)\(v)}"
        case .variant: return "v"
        case .structure(let items): return "(" + items.map(\.signature).joined() + ")"
        }
    }

    public static func == (a: DBusValue, b: DBusValue) -> Bool {
        switch (a, b) {
        case (.byte(let x), .byte(let y)): return x == y
        case (.bool(let x), .bool(let y)): return x == y
        case (.int32(let x), .int32(let y)): return x == y
        case (.uint32(let x), .uint32(let y)): return x == y
        case (.int64(let x), .int64(let y)): return x == y
        case (.uint64(let x), .uint64(let y)): return x == y
        case (.double(let x), .double(let y)): return x == y || (x.isNaN && y.isNaN)
        case (.string(let x), .string(let y)): return x == y
        case (.objectPath(let x), .objectPath(let y)): return x == y
        case (.signature(let x), .signature(let y)): return x == y
        case (.array(let e1, let x), .array(let e2, let y)): return e1 == e2 && x == y
        case (.dict(let k1, let v1, let x), .dict(let k2, let v2, let y)):
            return k1 == k2 && v1 == v2 && x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        case (.variant(let x), .variant(let y)): return x == y
        case (.structure(let x), .structure(let y)): return x == y
        default: return false
        }
    }

    /// `as`
    public static func strings(_ list: [String]) -> DBusValue { .array(element: "s", list.map(DBusValue.string)) }

    /// `a{sv}` from ordered pairs.
    public static func vardict(_ entries: [(String, DBusValue)]) -> DBusValue {
        .dict(key: "s", value: "v", entries.map { (.string($0.0), .variant($0.1)) })
    }

    // Accessors for reading arguments.
    public var stringValue: String? { if case .string(let s) = self { return s }; return nil }
    public var objectPathValue: ObjectPath? { if case .objectPath(let p) = self { return p }; return nil }
    public var boolValue: Bool? { if case .bool(let b) = self { return b }; return nil }
    public var doubleValue: Double? { if case .double(let d) = self { return d }; return nil }
    public var int64Value: Int64? { if case .int64(let v) = self { return v }; return nil }
    public var variantValue: DBusValue? { if case .variant(let v) = self { return v }; return nil }
}

/// A valid D-Bus object path (`/`, or `/` + elements of `[A-Za-z0-9_]+` separated by `/`).
public struct ObjectPath: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String

    public init?(_ s: String) {
        guard ObjectPath.isValid(s) else { return nil }
        rawValue = s
    }

    public var description: String { rawValue }

    public static func isValid(_ s: String) -> Bool {
        let u = Array(s.utf8)
        guard u.first == UInt8(ascii: "/") else { return false }
        if u.count == 1 { return true }
        if u.last == UInt8(ascii: "/") { return false }
        var prevSlash = false
        for c in u {
            if c == UInt8(ascii: "/") {
                if prevSlash { return false }
                prevSlash = true
                continue
            }
            prevSlash = false
            let ok = (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x5F
            if !ok { return false }
        }
        return true
    }
}

// D-Bus type codes: libdbus defines them as macros (`((int) 's')`), which Swift does not import.
enum TypeCode {
    static let byte = Int32(UInt8(ascii: "y"))
    static let bool = Int32(UInt8(ascii: "b"))
    static let int16 = Int32(UInt8(ascii: "n"))
    static let uint16 = Int32(UInt8(ascii: "q"))
    static let int32 = Int32(UInt8(ascii: "i"))
    static let uint32 = Int32(UInt8(ascii: "u"))
    static let int64 = Int32(UInt8(ascii: "x"))
    static let uint64 = Int32(UInt8(ascii: "t"))
    static let double = Int32(UInt8(ascii: "d"))
    static let string = Int32(UInt8(ascii: "s"))
    static let objectPath = Int32(UInt8(ascii: "o"))
    static let signature = Int32(UInt8(ascii: "g"))
    static let unixFD = Int32(UInt8(ascii: "h"))
    static let array = Int32(UInt8(ascii: "a"))
    static let variant = Int32(UInt8(ascii: "v"))
    static let structure = Int32(UInt8(ascii: "r"))
    static let dictEntry = Int32(UInt8(ascii: "e"))
    static let invalid = Int32(0)
}

// MARK: - Writing

enum Marshal {
    /// Appends `value` at `iter`. Sub-iterators live on the heap so their address is stable
    /// between open and close, as libdbus requires.
    static func append(_ value: DBusValue, to iter: UnsafeMutablePointer<DBusMessageIter>) {
        switch value {
        case .byte(var v): _ = dbus_message_iter_append_basic(iter, TypeCode.byte, &v)
        case .bool(let b):
            var v: dbus_bool_t = b ? 1 : 0
            _ = dbus_message_iter_append_basic(iter, TypeCode.bool, &v)
        case .int32(var v): _ = dbus_message_iter_append_basic(iter, TypeCode.int32, &v)
        case .uint32(var v): _ = dbus_message_iter_append_basic(iter, TypeCode.uint32, &v)
        case .int64(var v): _ = dbus_message_iter_append_basic(iter, TypeCode.int64, &v)
        case .uint64(var v): _ = dbus_message_iter_append_basic(iter, TypeCode.uint64, &v)
        case .double(var v): _ = dbus_message_iter_append_basic(iter, TypeCode.double, &v)
        case .string(let s): appendString(s, type: TypeCode.string, iter)
        case .objectPath(let p): appendString(p.rawValue, type: TypeCode.objectPath, iter)
        case .signature(let s): appendString(s, type: TypeCode.signature, iter)
        case .array(let element, let items):
            container(iter, TypeCode.array, element) { sub in for i in items { append(i, to: sub) } }
        case .dict(let k, let v, let entries):
            container(iter, TypeCode.array, "{\(k)\(v)}") { sub in
                for (key, val) in entries {
                    container(sub, TypeCode.dictEntry, nil) { e in
                        append(key, to: e)
                        append(val, to: e)
                    }
                }
            }
        case .variant(let inner):
            container(iter, TypeCode.variant, inner.signature) { sub in append(inner, to: sub) }
        case .structure(let items):
            container(iter, TypeCode.structure, nil) { sub in for i in items { append(i, to: sub) } }
        }
    }

    /// libdbus takes a string as a pointer to a `const char *`. Strings with NUL or invalid
    /// UTF-8 would make libdbus abort, so they are cleaned first.
    private static func appendString(_ s: String, type: Int32, _ iter: UnsafeMutablePointer<DBusMessageIter>) {
        let clean = s.utf8.contains(0) ? s.replacingText("\0", with: "") : s
        clean.withCString { cstr in
            var p: UnsafePointer<CChar>? = cstr
            _ = dbus_message_iter_append_basic(iter, type, &p)
        }
    }

    private static func container(_ iter: UnsafeMutablePointer<DBusMessageIter>, _ type: Int32, _ sig: String?,
                                  _ body: (UnsafeMutablePointer<DBusMessageIter>) -> Void)
    {
        let sub = UnsafeMutablePointer<DBusMessageIter>.allocate(capacity: 1)
        defer { sub.deallocate() }
        if let sig {
            _ = sig.withCString { dbus_message_iter_open_container(iter, type, $0, sub) }
        } else {
            _ = dbus_message_iter_open_container(iter, type, nil, sub)
        }
        body(sub)
        _ = dbus_message_iter_close_container(iter, sub)
    }

    static func append(_ values: [DBusValue], to message: OpaquePointer) {
        let iter = UnsafeMutablePointer<DBusMessageIter>.allocate(capacity: 1)
        defer { iter.deallocate() }
        dbus_message_iter_init_append(message, iter)
        for v in values { append(v, to: iter) }
    }

    // MARK: - Reading

    static func read(_ message: OpaquePointer) -> [DBusValue] {
        let iter = UnsafeMutablePointer<DBusMessageIter>.allocate(capacity: 1)
        defer { iter.deallocate() }
        guard dbus_message_iter_init(message, iter) != 0 else { return [] }
        return readAll(iter)
    }

    private static func readAll(_ iter: UnsafeMutablePointer<DBusMessageIter>) -> [DBusValue] {
        var out: [DBusValue] = []
        while dbus_message_iter_get_arg_type(iter) != TypeCode.invalid {
            if let v = readOne(iter) { out.append(v) }
            _ = dbus_message_iter_next(iter)
        }
        return out
    }

    private static func readOne(_ iter: UnsafeMutablePointer<DBusMessageIter>) -> DBusValue? {
        let type = dbus_message_iter_get_arg_type(iter)
        func basic<T: BitwiseCopyable>(_ zero: T) -> T {
            var v = zero
            withUnsafeMutableBytes(of: &v) { dbus_message_iter_get_basic(iter, $0.baseAddress) }
            return v
        }
        switch type {
        case TypeCode.byte: return .byte(basic(UInt8(0)))
        case TypeCode.bool: return .bool(basic(dbus_bool_t(0)) != 0)
        case TypeCode.int16: return .int32(Int32(basic(Int16(0))))
        case TypeCode.uint16: return .uint32(UInt32(basic(UInt16(0))))
        case TypeCode.int32: return .int32(basic(Int32(0)))
        case TypeCode.uint32: return .uint32(basic(UInt32(0)))
        case TypeCode.int64: return .int64(basic(Int64(0)))
        case TypeCode.uint64: return .uint64(basic(UInt64(0)))
        case TypeCode.double: return .double(basic(Double(0)))
        case TypeCode.string, TypeCode.objectPath, TypeCode.signature:
            var p: UnsafePointer<CChar>? = nil
            dbus_message_iter_get_basic(iter, &p)
            let s = p.map { String(cString: $0) } ?? ""
            if type == TypeCode.string { return .string(s) }
            if type == TypeCode.signature { return .signature(s) }
            return ObjectPath(s).map(DBusValue.objectPath) ?? .string(s)
        case TypeCode.variant:
            return withSub(iter) { sub in readOne(sub).map(DBusValue.variant) }
        case TypeCode.structure:
            return withSub(iter) { sub in .structure(readAll(sub)) }
        case TypeCode.array:
            let elementSig = signatureOfSub(iter)
            if dbus_message_iter_get_element_type(iter) == TypeCode.dictEntry {
                let inner = elementSig.dropFirst().dropLast()  // {kv} → kv
                let keySig = String(inner.prefix(1))
                let valSig = String(inner.dropFirst())
                return withSub(iter) { sub in
                    var entries: [(DBusValue, DBusValue)] = []
                    while dbus_message_iter_get_arg_type(sub) == TypeCode.dictEntry {
                        if let pair = withSub(sub, { e -> (DBusValue, DBusValue)? in
                            let items = readAll(e)
                            return items.count == 2 ? (items[0], items[1]) : nil
                        }) { entries.append(pair) }
                        _ = dbus_message_iter_next(sub)
                    }
                    return .dict(key: keySig, value: valSig, entries)
                }
            }
            return withSub(iter) { sub in .array(element: elementSig, readAll(sub)) }
        default:
            return nil  // unix fds and anything newer: not used by MPRIS
        }
    }

    private static func withSub<T>(_ iter: UnsafeMutablePointer<DBusMessageIter>,
                                   _ body: (UnsafeMutablePointer<DBusMessageIter>) -> T?) -> T?
    {
        let sub = UnsafeMutablePointer<DBusMessageIter>.allocate(capacity: 1)
        defer { sub.deallocate() }
        dbus_message_iter_recurse(iter, sub)
        return body(sub)
    }

    /// The element signature of the array at `iter`, e.g. "s" for `as`, "{sv}" for `a{sv}`.
    private static func signatureOfSub(_ iter: UnsafeMutablePointer<DBusMessageIter>) -> String {
        guard let sig = dbus_message_iter_get_signature(iter) else { return "" }
        defer { dbus_free(sig) }
        return String(String(cString: sig).dropFirst())
    }
}
