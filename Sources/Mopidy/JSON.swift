/// A JSON value and a strict parser/serializer for it. Our own rather than Foundation's so that
/// the daemon stays on the small runtime, and so that every malformed reply (invalid UTF-8, deep
/// nesting, huge numbers) is an error value, never a crash: the fuzzer drives `JSON.parse`.
public enum JSON: Equatable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSON])
    case object([String: JSON])

    public subscript(key: String) -> JSON? {
        if case .object(let o) = self { return o[key] }
        return nil
    }

    public var string: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// A whole number, also from a string such as "42" (some backends send numbers as strings).
    public var int: Int? {
        switch self {
        case .number(let d) where d.isFinite && d == d.rounded() && abs(d) < 9.0e15: return Int(d)
        case .string(let s): return Int(s.trimmingCharacters(in: " "))
        default: return nil
        }
    }

    public var double: Double? {
        switch self {
        case .number(let d) where d.isFinite: return d
        case .string(let s): return Double(s)
        default: return nil
        }
    }

    public var bool: Bool? {
        if case .bool(let b) = self { return b }
        return nil
    }

    public var array: [JSON]? {
        if case .array(let a) = self { return a }
        return nil
    }

    public var isNull: Bool { self == .null }
}

extension String {
    fileprivate func trimmingCharacters(in set: Character) -> String {
        String(drop(while: { $0 == set }).reversed().drop(while: { $0 == set }).reversed())
    }
}

public struct JSONError: Error, CustomStringConvertible, Equatable, Sendable {
    public let offset: Int
    public let reason: String
    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}

extension JSON {
    /// Parses one JSON text (RFC 8259). Rejects invalid UTF-8, trailing garbage and nesting
    /// deeper than `maxDepth`.
    public static func parse(_ bytes: [UInt8], maxDepth: Int = 64) throws(JSONError) -> JSON {
        var p = JSONParser(bytes: bytes, maxDepth: maxDepth)
        p.skipSpace()
        let v = try p.value(depth: 0)
        p.skipSpace()
        if p.i != bytes.count { throw p.error("unexpected data after the value") }
        return v
    }

    public static func parse(_ text: String) throws(JSONError) -> JSON {
        try parse(Array(text.utf8))
    }

    /// Compact serialization; object keys sorted so output is stable.
    public func serialized() -> String {
        var out = ""
        write(to: &out)
        return out
    }

    private func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .number(let d):
            if d.isFinite && d == d.rounded() && abs(d) < 9.0e15 { out += String(Int(d)) }
            else if d.isFinite { out += "\(d)" }
            else { out += "null" }
        case .string(let s): JSON.quote(s, into: &out)
        case .array(let a):
            out += "["
            for (i, v) in a.enumerated() {
                if i > 0 { out += "," }
                v.write(to: &out)
            }
            out += "]"
        case .object(let o):
            out += "{"
            for (i, k) in o.keys.sorted().enumerated() {
                if i > 0 { out += "," }
                JSON.quote(k, into: &out)
                out += ":"
                o[k]!.write(to: &out)
            }
            out += "}"
        }
    }

    static func quote(_ s: String, into out: inout String) {
        out += "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where u.value < 0x20:
                let hex = String(u.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(u)
            }
        }
        out += "\""
    }
}
