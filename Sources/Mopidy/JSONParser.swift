/// The strict RFC 8259 parser behind `JSON.parse`: byte by byte, with a depth limit and a
/// memory budget, every malformed input an error value. Reads the caller's bytes in place.
struct JSONParser {
    let bytes: UnsafeBufferPointer<UInt8>
    let maxDepth: Int
    let maxTreeBytes: Int
    /// How many elements of an array are built; the rest are parsed with `build` false.
    let maxArrayElements: Int
    var i = 0
    /// The estimated heap of what has been built so far.
    var treeBytes = 0

    init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int, maxTreeBytes: Int, maxArrayElements: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
        self.maxTreeBytes = maxTreeBytes
        self.maxArrayElements = maxArrayElements
    }

    /// What a built value costs, in bytes of heap: measured with glibc's malloc on x86_64 by
    /// parsing 8 MiB of each shape (`[0,…]`, `[[0],…]`, `[{"a":0},…]`, `["…17 bytes",…]`, one
    /// object of 700 000 members, the rig's tracklist) and reading VmHWM, within 30 % of it. A
    /// value is a slot of 24 bytes in its parent plus the array growth around it; a string of
    /// more than 15 UTF-8 bytes has storage of its own; an array or object a buffer; an object a
    /// hash table of about twice its members. Where a budget stops a parse, the peak is at most
    /// 2.3 times the budget (a hash table being doubled at that moment).
    enum Cost {
        static let value = 32
        static let heapString = 48
        static let array = 64
        static let object = 96
        static let member = 64
        /// Strings of up to 15 UTF-8 bytes live inside the value itself.
        static func string(_ utf8Count: Int) -> Int { utf8Count > 15 ? heapString + utf8Count : 0 }
    }

    func error(_ reason: String) -> JSONError { JSONError(offset: i, reason: reason) }

    /// Counts `bytes` against the budget; throws once the tree would pass it, before it does.
    mutating func spend(_ bytes: Int) throws(JSONError) {
        treeBytes += bytes
        if treeBytes > maxTreeBytes {
            throw error("the parsed value would take more than \(maxTreeBytes >> 20) MiB of memory")
        }
    }

    mutating func skipSpace() {
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 { i += 1 }
    }

    /// The next value; with `build` false it is checked just as strictly, and `.null` stands for
    /// it without taking memory.
    mutating func value(depth: Int, build: Bool = true) throws(JSONError) -> JSON {
        guard depth <= maxDepth else { throw error("nested deeper than \(maxDepth)") }
        guard i < bytes.count else { throw error("unexpected end") }
        if build { try spend(Cost.value) }
        switch bytes[i] {
        case UInt8(ascii: "{"): return try object(depth: depth, build: build)
        case UInt8(ascii: "["): return try array(depth: depth, build: build)
        case UInt8(ascii: "\""):
            let s = try string(build: build)
            return build ? .string(s) : .null
        case UInt8(ascii: "t"): try literal("true"); return build ? .bool(true) : .null
        case UInt8(ascii: "f"): try literal("false"); return build ? .bool(false) : .null
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let d = try number()
            return build ? .number(d) : .null
        default: throw error("unexpected character")
        }
    }

    mutating func literal(_ word: StaticString) throws(JSONError) {
        let n = word.utf8CodeUnitCount
        guard i + n <= bytes.count else { throw error("unexpected end") }
        let w = UnsafeBufferPointer(start: word.utf8Start, count: n)
        for k in 0..<n where bytes[i + k] != w[k] { throw error("invalid literal") }
        i += n
    }

    mutating func object(depth: Int, build: Bool) throws(JSONError) -> JSON {
        i += 1
        var o: [String: JSON] = [:]
        skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "}") { i += 1; return build ? .object(o) : .null }
        if build { try spend(Cost.object) }
        while true {
            skipSpace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else { throw error("expected a key") }
            if build { try spend(Cost.member) }
            let k = try string(build: build)
            skipSpace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw error("expected ':'") }
            i += 1
            skipSpace()
            let v = try value(depth: depth + 1, build: build)
            if build { o[k] = v }
            skipSpace()
            guard i < bytes.count else { throw error("unexpected end") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "}") { i += 1; return build ? .object(o) : .null }
            throw error("expected ',' or '}'")
        }
    }

    mutating func array(depth: Int, build: Bool) throws(JSONError) -> JSON {
        i += 1
        var a: [JSON] = []
        skipSpace()
        if i < bytes.count, bytes[i] == UInt8(ascii: "]") { i += 1; return build ? .array(a) : .null }
        if build { try spend(Cost.array) }
        while true {
            skipSpace()
            let keep = build && a.count < maxArrayElements
            let v = try value(depth: depth + 1, build: keep)
            if keep { a.append(v) }
            skipSpace()
            guard i < bytes.count else { throw error("unexpected end") }
            if bytes[i] == UInt8(ascii: ",") { i += 1; continue }
            if bytes[i] == UInt8(ascii: "]") { i += 1; return build ? .array(a) : .null }
            throw error("expected ',' or ']'")
        }
    }

    mutating func number() throws(JSONError) -> Double {
        let start = i
        if bytes[i] == UInt8(ascii: "-") { i += 1 }
        func digits(_ p: inout JSONParser) -> Int {
            let s = p.i
            while p.i < p.bytes.count, p.bytes[p.i] >= 0x30, p.bytes[p.i] <= 0x39 { p.i += 1 }
            return p.i - s
        }
        guard i < bytes.count else { throw error("unexpected end in number") }
        if bytes[i] == UInt8(ascii: "0") { i += 1 }
        else if digits(&self) == 0 { throw error("invalid number") }
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            i += 1
            if digits(&self) == 0 { throw error("invalid number") }
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            if digits(&self) == 0 { throw error("invalid number") }
        }
        let text = String(decoding: bytes[start..<i], as: UTF8.self)
        guard let d = Double(text) else { throw error("invalid number") }
        return d
    }

    mutating func hex4() throws(JSONError) -> UInt32 {
        guard i + 4 <= bytes.count else { throw error("unexpected end in \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[i]
            let d: UInt32
            switch c {
            case 0x30...0x39: d = UInt32(c - 0x30)
            case 0x41...0x46: d = UInt32(c - 0x41 + 10)
            case 0x61...0x66: d = UInt32(c - 0x61 + 10)
            default: throw error("invalid \\u escape")
            }
            v = v << 4 | d
            i += 1
        }
        return v
    }

    /// A string's text; with `build` false only checked, and "" returned. A built string is
    /// counted against the budget by its length in the text, before its storage is made.
    mutating func string(build: Bool = true) throws(JSONError) -> String {
        i += 1
        let start = i
        var out: [UInt8] = []
        var escaped = false
        var runStart = i
        /// Escapes are ASCII, so the text between them is valid UTF-8 on its own or not at all.
        func checkRun(_ p: JSONParser, _ run: Range<Int>) throws(JSONError) {
            var it = p.bytes[run].makeIterator()
            var utf8 = Unicode.UTF8.ForwardParser()
            while true {
                switch utf8.parseScalar(from: &it) {
                case .valid: continue
                case .emptyInput: return
                case .error: throw p.error("string is not valid UTF-8")
                }
            }
        }
        while true {
            guard i < bytes.count else { throw error("unterminated string") }
            let c = bytes[i]
            if c == UInt8(ascii: "\"") {
                defer { i += 1 }
                guard build else {
                    try checkRun(self, runStart..<i)
                    return ""
                }
                try spend(Cost.string(i - start))
                if escaped {
                    out.append(contentsOf: bytes[runStart..<i])
                    break
                }
                // Without escapes (most strings) the text is read in place: no copy to build.
                guard let s = String(validating: bytes[runStart..<i], as: UTF8.self) else {
                    throw error("string is not valid UTF-8")
                }
                return s
            }
            if c < 0x20 { throw error("control character in string") }
            if c != UInt8(ascii: "\\") { i += 1; continue }
            if build { out.append(contentsOf: bytes[runStart..<i]) } else { try checkRun(self, runStart..<i) }
            escaped = true
            i += 1
            guard i < bytes.count else { throw error("unterminated escape") }
            let e = bytes[i]
            i += 1
            let unescaped: UInt8
            switch e {
            case UInt8(ascii: "\""): unescaped = 0x22
            case UInt8(ascii: "\\"): unescaped = 0x5C
            case UInt8(ascii: "/"): unescaped = 0x2F
            case UInt8(ascii: "b"): unescaped = 0x08
            case UInt8(ascii: "f"): unescaped = 0x0C
            case UInt8(ascii: "n"): unescaped = 0x0A
            case UInt8(ascii: "r"): unescaped = 0x0D
            case UInt8(ascii: "t"): unescaped = 0x09
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if (0xD800...0xDBFF).contains(scalar) {
                    // A surrogate pair; a lone surrogate becomes U+FFFD rather than an error.
                    if i + 6 <= bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u") {
                        i += 2
                        let low = try hex4()
                        scalar = (0xDC00...0xDFFF).contains(low)
                            ? 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00) : 0xFFFD
                    } else {
                        scalar = 0xFFFD
                    }
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    scalar = 0xFFFD
                }
                if build { out.append(contentsOf: Array(String(Character(Unicode.Scalar(scalar)!)).utf8)) }
                runStart = i
                continue
            default: throw error("invalid escape")
            }
            if build { out.append(unescaped) }
            runStart = i
        }
        guard let s = String(validating: out, as: UTF8.self) else { throw error("string is not valid UTF-8") }
        return s
    }
}
