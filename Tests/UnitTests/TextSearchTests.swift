import Support
import XCTest

/// Support/Text.swift: the byte-wise searches the shipped modules use in place of
/// `_StringProcessing`'s.
final class TextSearchTests: XCTestCase {
    func testFirstRange() {
        let cases: [(String, String, (Int, Int)?)] = [
            ("http://host", "://", (4, 7)),
            ("aab", "ab", (1, 3)),            // a false start before the match
            ("aaa", "aa", (0, 2)),
            ("abc", "abcd", nil),             // runs off the end
            ("", "a", nil),
            ("abc", "", (0, 0)),
            ("xyz", "z", (2, 3)),
            ("Café Ñandú – 東京", "東京", (18, 24)), // offsets in UTF-8 bytes
            ("e\u{301}://x", "://", (3, 6)),  // after a combining mark
        ]
        for (hay, needle, want) in cases {
            let r = hay.firstRange(ofText: needle)
            let got = r.map { (hay.utf8.distance(from: hay.startIndex, to: $0.lowerBound),
                               hay.utf8.distance(from: hay.startIndex, to: $0.upperBound)) }
            XCTAssertEqual(got?.0, want?.0, "\(hay) / \(needle)")
            XCTAssertEqual(got?.1, want?.1, "\(hay) / \(needle)")
            XCTAssertEqual(hay.containsText(needle), want != nil, "\(hay) / \(needle)")
        }
    }

    func testSubstringRangesAreInTheWholeString() throws {
        let s = "one://two://three"
        let first = try XCTUnwrap(s.firstRange(ofText: "://"))
        let rest = s[first.upperBound...]
        let second = try XCTUnwrap(rest.firstRange(ofText: "://"))
        XCTAssertEqual(String(s[second.upperBound...]), "three")
    }

    /// A match that ends inside a character ("e" of "e\u{301}") leaves a Substring that starts
    /// on the combining mark; searching and replacing in it stay on scalar boundaries.
    func testARemainderStartingInsideACharacter() throws {
        let s = "xe\u{301}ye\u{301}z"
        let e = try XCTUnwrap(s.firstRange(ofText: "e"))
        let rest = s[e.upperBound...]
        XCTAssertEqual(Array(rest.unicodeScalars).first, "\u{301}")
        let y = try XCTUnwrap(rest.firstRange(ofText: "ye"))
        XCTAssertEqual(String(s[y.upperBound...]).unicodeScalars.map(\.value), [0x301, 0x7A])
        XCTAssertEqual(s.replacingText("e", with: "E").unicodeScalars.map(\.value), [0x78, 0x45, 0x301, 0x79, 0x45, 0x301, 0x7A])
    }

    func testReplacing() {
        XCTAssertEqual("a_b_c".replacingText("_", with: "-"), "a-b-c")
        XCTAssertEqual("secret and secret".replacingText("secret", with: "***"), "*** and ***")
        XCTAssertEqual("aaaa".replacingText("aa", with: "b"), "bb")
        XCTAssertEqual("nothing here".replacingText("zz", with: "y"), "nothing here")
        XCTAssertEqual("keep".replacingText("", with: "x"), "keep")
        XCTAssertEqual("a\0b\0".replacingText("\0", with: ""), "ab")
        XCTAssertEqual("pw: pässwörd!".replacingText("pässwörd", with: "***"), "pw: ***!")
    }

    /// Seeded random strings over a small alphabet (with multi-byte and combining scalars): the
    /// byte search agrees with a search of the UTF-8 arrays, and replacing leaves no needle.
    func testAgreesWithAByteArraySearch() {
        var rng = SplitMix64(seed: 17)
        let alphabet: [String] = ["a", "b", "é", "\u{301}", "東", ":"]
        func word(_ n: Int) -> String { (0..<n).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }.joined() }
        for _ in 0..<2000 {
            let hay = word(Int(rng.next() % 12)), needle = word(1 + Int(rng.next() % 3))
            let h = Array(hay.utf8), n = Array(needle.utf8)
            let want = h.count < n.count ? nil : (0...(h.count - n.count)).first { Array(h[$0..<($0 + n.count)]) == n }
            let r = hay.firstRange(ofText: needle)
            let got = r.map { hay.utf8.distance(from: hay.startIndex, to: $0.lowerBound) }
            let end = r.map { hay.utf8.distance(from: hay.startIndex, to: $0.upperBound) }
            let what = "\(Array(hay.unicodeScalars)) / \(Array(needle.unicodeScalars))"
            XCTAssertEqual(got, want, what)
            XCTAssertEqual(end, want.map { $0 + n.count }, what)
            XCTAssertEqual(Array(hay.replacingText(needle, with: "_").utf8), replaced(h, n, Array("_".utf8)), what)
        }
    }
}

/// Every non-overlapping `n` in `h`, left to right, replaced by `by`: the byte-array model.
private func replaced(_ h: [UInt8], _ n: [UInt8], _ by: [UInt8]) -> [UInt8] {
    var out: [UInt8] = [], i = 0
    while i < h.count {
        if i + n.count <= h.count, Array(h[i..<(i + n.count)]) == n {
            out += by
            i += n.count
        } else {
            out.append(h[i])
            i += 1
        }
    }
    return out
}
