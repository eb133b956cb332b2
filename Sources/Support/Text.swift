/// Substring search by UTF-8 bytes, in the standard library's own terms.
///
/// `String.contains(_:)` with a string, `firstRange(of:)` and `replacing(_:with:)` come from
/// `_StringProcessing`, whose code and `_RegexParser`'s (0.78 MB) a statically linked binary then
/// carries and maps. Every module of the shipped binary is built without that module's
/// implicit import (`Package.swift`), so these are what its code uses instead.
///
/// Bytes, not characters: a needle matches wherever its UTF-8 appears, also as the start of a
/// longer character ("e" in "e\u{301}"), and another spelling of the same text ("é" as
/// "e\u{301}") does not match. For the ASCII markers searched for that changes nothing, and for
/// a secret to redact it is what is wanted: a secret is echoed in its own bytes. A match of a
/// valid UTF-8 needle starts and ends on scalar boundaries, so its range slices safely.
extension Substring {
    public func firstRange(ofText needle: String) -> Range<String.Index>? {
        let hay = utf8, pin = needle.utf8
        guard let first = pin.first else { return startIndex..<startIndex }
        var from = hay.startIndex
        while let start = hay[from...].firstIndex(of: first) {
            var h = start, p = pin.startIndex
            while p != pin.endIndex, h != hay.endIndex, hay[h] == pin[p] {
                hay.formIndex(after: &h)
                pin.formIndex(after: &p)
            }
            if p == pin.endIndex { return start..<h }
            if h == hay.endIndex { return nil }
            from = hay.index(after: start)
        }
        return nil
    }

    public func containsText(_ needle: String) -> Bool { firstRange(ofText: needle) != nil }
}

extension String {
    public func firstRange(ofText needle: String) -> Range<String.Index>? { self[...].firstRange(ofText: needle) }

    public func containsText(_ needle: String) -> Bool { self[...].firstRange(ofText: needle) != nil }

    /// Every occurrence of a non-empty `needle`, left to right, replaced by `replacement`.
    public func replacingText(_ needle: String, with replacement: String) -> String {
        guard !needle.isEmpty else { return self }
        var out = ""
        var rest = self[...]
        while let r = rest.firstRange(ofText: needle) {
            out += rest[..<r.lowerBound]
            out += replacement
            rest = rest[r.upperBound...]
        }
        return out + rest
    }
}
