/// `n` bytes as people read them in a message: "8 MiB", "3.2 MiB", "1.5 KiB", "12 bytes".
public func byteCount(_ n: Int) -> String {
    for (shift, name) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] where n >= 1 << shift {
        if n & (1 << shift - 1) == 0 { return "\(n >> shift) \(name)" }
        return "\((Double(n) / Double(1 << shift) * 10).rounded() / 10) \(name)"
    }
    return "\(n) bytes"
}
