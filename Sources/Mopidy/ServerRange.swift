// The fuzz build (scripts/fuzz) compiles these files with Support's into one module.
#if canImport(Support)
import Support
#endif

/// The ranges in which the bridge takes numbers from the server. A number reaches arithmetic
/// (µs conversions, sums, products) only from inside one of these, so no value a server sends can
/// make it trap; a value outside is clamped or dropped with one log line naming it.
public enum ServerRange {
    /// A day, in ms: longer than any track or position a music server plays.
    public static let dayMs = 86_400_000
    /// Where playback stands in a track, ms.
    public static let positionMs = 0...dayMs
    /// A track's length, ms; 0 and absent both mean unknown (streams).
    public static let lengthMs = 1...dayMs
    /// Mopidy's mixer, percent.
    public static let volume = 0...100
    /// Mopidy counts tracklist ids up from 0; JSON keeps integers exact below 2^53.
    public static let tlid = 0...(1 << 53 - 1)
    /// Track and disc numbers as tags carry them.
    public static let trackNumber = 1...10_000
    /// An image's width or height, pixels (a product of two stays far inside Int).
    public static let imageSide = 0...100_000
}

extension ServerRange {
    /// `value` clamped into `range`, with one log line naming `what` when it had to be.
    static func clamp(_ value: Int, _ range: ClosedRange<Int>, _ what: @autoclosure () -> String) -> Int {
        if range.contains(value) { return value }
        let c = min(max(value, range.lowerBound), range.upperBound)
        Log.warning("Mopidy sent \(what()) of \(value), outside \(range.lowerBound)…\(range.upperBound); using \(c)")
        return c
    }

    /// `value` when it lies in `range`; else nil, with one log line naming `what`.
    static func within(_ value: Int, _ range: ClosedRange<Int>, _ what: @autoclosure () -> String) -> Int? {
        if range.contains(value) { return value }
        Log.warning("Mopidy sent \(what()) of \(value), outside \(range.lowerBound)…\(range.upperBound); ignored")
        return nil
    }
}

extension Optional where Wrapped == JSON {
    /// The field as a whole number (see `JSON.int`): nil when absent or null, nil with a log line
    /// when it is something else (a string, a fraction, a number too large to be exact).
    func wholeNumber(_ what: @autoclosure () -> String) -> Int? {
        guard let j = self, !j.isNull else { return nil }
        guard let v = j.int else {
            Log.warning("Mopidy sent \(what()) as \(j.preview), not an exact whole number; ignored")
            return nil
        }
        return v
    }

    /// The field as a whole number clamped into `range` (one log line when it had to be).
    func clampedInt(_ range: ClosedRange<Int>, _ what: @autoclosure () -> String) -> Int? {
        wholeNumber(what()).map { ServerRange.clamp($0, range, what()) }
    }

    /// The field as a whole number in `range`; nil when absent, and nil with one log line when
    /// outside it or not a whole number.
    func intWithin(_ range: ClosedRange<Int>, _ what: @autoclosure () -> String) -> Int? {
        wholeNumber(what()).flatMap { ServerRange.within($0, range, what()) }
    }
}

extension JSON {
    /// What the value is, in a few words for a log line (never the whole of a large value).
    var preview: String {
        switch self {
        case .null: return "null"
        case .bool(let b): return String(b)
        case .number(let d): return "\(d)"
        case .string(let s):
            var out = ""
            JSON.quote(s.count > 40 ? String(s.prefix(40)) + "…" : s, into: &out)
            return "the string " + out
        case .array(let a): return "an array of \(a.count)"
        case .object(let o): return "an object of \(o.count) keys"
        }
    }
}
