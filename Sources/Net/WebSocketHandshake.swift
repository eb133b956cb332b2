/// The WebSocket handshake's key arithmetic (RFC 6455 §4.2.2): base64 and SHA-1, small and our
/// own so Net needs no crypto library of its own for it.

/// `Sec-WebSocket-Accept` for a key: base64(SHA-1(key + GUID)), RFC 6455 §4.2.2.
public func webSocketAccept(forKey key: String) -> String {
    base64Encode(sha1(Array((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8)))
}

public func base64Encode(_ bytes: [UInt8]) -> String {
    let table = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    var out: [UInt8] = []
    out.reserveCapacity((bytes.count + 2) / 3 * 4)
    var i = 0
    while i + 2 < bytes.count {
        let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
        out += [table[Int(v >> 18)], table[Int(v >> 12 & 63)], table[Int(v >> 6 & 63)], table[Int(v & 63)]]
        i += 3
    }
    let rest = bytes.count - i
    if rest == 1 {
        let v = UInt32(bytes[i]) << 16
        out += [table[Int(v >> 18)], table[Int(v >> 12 & 63)], UInt8(ascii: "="), UInt8(ascii: "=")]
    } else if rest == 2 {
        let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
        out += [table[Int(v >> 18)], table[Int(v >> 12 & 63)], table[Int(v >> 6 & 63)], UInt8(ascii: "=")]
    }
    return String(decoding: out, as: UTF8.self)
}

/// SHA-1, only for the WebSocket handshake (not for anything secret).
public func sha1(_ message: [UInt8]) -> [UInt8] {
    var h: (UInt32, UInt32, UInt32, UInt32, UInt32) =
        (0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0)
    var msg = message
    let bitLength = UInt64(message.count) * 8
    msg.append(0x80)
    while msg.count % 64 != 56 { msg.append(0) }
    for i in (0..<8).reversed() { msg.append(UInt8(truncatingIfNeeded: bitLength >> (UInt64(i) * 8))) }
    var w = [UInt32](repeating: 0, count: 80)
    for chunk in stride(from: 0, to: msg.count, by: 64) {
        for i in 0..<16 {
            let j = chunk + i * 4
            w[i] = UInt32(msg[j]) << 24 | UInt32(msg[j + 1]) << 16 | UInt32(msg[j + 2]) << 8 | UInt32(msg[j + 3])
        }
        for i in 16..<80 {
            let x = w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]
            w[i] = x << 1 | x >> 31
        }
        var (a, b, c, d, e) = h
        for i in 0..<80 {
            let f: UInt32, k: UInt32
            switch i {
            case 0..<20: f = (b & c) | (~b & d); k = 0x5A827999
            case 20..<40: f = b ^ c ^ d; k = 0x6ED9EBA1
            case 40..<60: f = (b & c) | (b & d) | (c & d); k = 0x8F1BBCDC
            default: f = b ^ c ^ d; k = 0xCA62C1D6
            }
            let t = (a << 5 | a >> 27) &+ f &+ e &+ k &+ w[i]
            e = d; d = c; c = b << 30 | b >> 2; b = a; a = t
        }
        h = (h.0 &+ a, h.1 &+ b, h.2 &+ c, h.3 &+ d, h.4 &+ e)
    }
    return [h.0, h.1, h.2, h.3, h.4].flatMap { v in (0..<4).map { UInt8(truncatingIfNeeded: v >> (24 - $0 * 8)) } }
}
