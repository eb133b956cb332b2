/// Text from outside (a server's track titles, error texts) made safe to print on a terminal or
/// in a log line: control characters are shown escaped (`\x1B`, `\n`) instead of acting — an
/// escape sequence could rewrite the screen or the window title, a newline forge a log line —
/// and so are the bidirectional overrides, which reorder how the rest of a line reads.
public func terminalSafe(_ text: String) -> String {
    guard text.unicodeScalars.contains(where: needsEscape) else { return text }
    var out = ""
    for u in text.unicodeScalars {
        guard needsEscape(u) else { out.unicodeScalars.append(u); continue }
        switch u {
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        default:
            let hex = String(u.value, radix: 16, uppercase: true)
            out += u.value < 0x100 ? "\\x" + String(repeating: "0", count: 2 - hex.count) + hex : "\\u{\(hex)}"
        }
    }
    return out
}

/// C0 and C1 controls, DEL, and the bidirectional embeddings, overrides and isolates.
func needsEscape(_ u: Unicode.Scalar) -> Bool {
    switch u.value {
    case 0x00...0x1F, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069: return true
    default: return false
    }
}
