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

    /// A whole number that a JSON number states exactly, else nil: a string such as "42" is not
    /// a number here (what it would stand for is unchecked text), nor a fraction, nor a magnitude
    /// of 2^53 or more, beyond which a double does not hold every integer (RFC 8259 §6).
    /// Callers still check the range they can use (`ServerRange`).
    public var int: Int? {
        guard case .number(let d) = self, d.isFinite, abs(d) < JSON.exactIntegerLimit else { return nil }
        return Int(exactly: d)
    }

    /// 2^53: every integer below it in magnitude is a double exactly.
    public static let exactIntegerLimit = 9_007_199_254_740_992.0

    /// A finite JSON number; nil for anything else, a string included.
    public var double: Double? {
        if case .number(let d) = self, d.isFinite { return d }
        return nil
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

public struct JSONError: Error, CustomStringConvertible, Equatable, Sendable {
    public let offset: Int
    public let reason: String
    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}

extension JSON {
    /// Parses one JSON text (RFC 8259). Rejects invalid UTF-8, trailing garbage, nesting deeper
    /// than `maxDepth`, and a text whose tree would take more than `maxTreeBytes` of memory (an
    /// estimate kept as the tree is built, `JSONParser.Cost`): a tree takes 4× (real tracks) to
    /// 23× (`[{"a":0},…]`) the bytes of its text, so a size limit on the text alone does not bound
    /// it. An array keeps its first `maxArrayElements` elements: the rest are checked as
    /// strictly but never built, for a reader that uses only the start of a long list.
    public static func parse(_ bytes: [UInt8], maxDepth: Int = 64, maxTreeBytes: Int = defaultMaxTreeBytes,
                             maxArrayElements: Int = .max) throws(JSONError) -> JSON
    {
        let r = bytes.withUnsafeBufferPointer { buf in
            parse(buf, maxDepth: maxDepth, maxTreeBytes: maxTreeBytes, maxArrayElements: maxArrayElements)
        }
        return try r.get()
    }

    /// The same, reading the string's own UTF-8 in place (no copy of a message of megabytes).
    public static func parse(_ text: String, maxDepth: Int = 64, maxTreeBytes: Int = defaultMaxTreeBytes,
                             maxArrayElements: Int = .max) throws(JSONError) -> JSON
    {
        let r = text.utf8.withContiguousStorageIfAvailable { buf in
            parse(buf, maxDepth: maxDepth, maxTreeBytes: maxTreeBytes, maxArrayElements: maxArrayElements)
        }
        if let r { return try r.get() }
        return try parse(Array(text.utf8), maxDepth: maxDepth, maxTreeBytes: maxTreeBytes,
                         maxArrayElements: maxArrayElements)
    }

    /// What a tree may take unless the caller says otherwise.
    public static let defaultMaxTreeBytes = 16 << 20

    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int, maxTreeBytes: Int,
                              maxArrayElements: Int) -> Result<JSON, JSONError>
    {
        var p = JSONParser(bytes: bytes, maxDepth: maxDepth, maxTreeBytes: maxTreeBytes,
                           maxArrayElements: maxArrayElements)
        do throws(JSONError) {
            p.skipSpace()
            let v = try p.value(depth: 0)
            p.skipSpace()
            if p.i != bytes.count { throw p.error("unexpected data after the value") }
            return .success(v)
        } catch {
            return .failure(error)
        }
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
            // Every control character, DEL and C1 included, as an escape: what `status --json`
            // prints then cannot act on a terminal.
            case _ where u.value < 0x20 || (0x7F...0x9F).contains(u.value) || (0x202A...0x202E).contains(u.value)
                || (0x2066...0x2069).contains(u.value):
                let hex = String(u.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(u)
            }
        }
        out += "\""
    }
}
