/// RFC 6455 framing, without any I/O: bytes in, whole messages out. Pure, so unit tests and the
/// fuzzer can drive it with any input.

public enum WebSocketMessage: Equatable, Sendable {
    case text(String)
    case binary([UInt8])
    case ping([UInt8])
    case pong([UInt8])
    /// Close frame: status code (1005 when none was sent) and reason.
    case close(code: UInt16, reason: String)
    /// A text or binary message over the reader's `messageLimit`, read past without being held
    /// (see `skipLimit`): how many bytes it had.
    case skipped(bytes: Int)
}

public enum WebSocketProtocolError: Error, Equatable, CustomStringConvertible, Sendable {
    case reservedBitsSet
    case unknownOpcode(UInt8)
    case maskedServerFrame
    case controlFrameTooLong(Int)
    case fragmentedControlFrame
    case unexpectedContinuation
    case expectedContinuation
    case messageTooLarge(limit: Int)
    case invalidUTF8
    case invalidLength

    public var description: String {
        switch self {
        case .reservedBitsSet: return "frame has reserved bits set (no extension was negotiated)"
        case .unknownOpcode(let op): return "frame has unknown opcode \(op)"
        case .maskedServerFrame: return "server sent a masked frame"
        case .controlFrameTooLong(let n): return "control frame of \(n) bytes (125 at most)"
        case .fragmentedControlFrame: return "fragmented control frame"
        case .unexpectedContinuation: return "continuation frame without a message to continue"
        case .expectedContinuation: return "new data frame while a fragmented message is unfinished"
        case .messageTooLarge(let limit): return "message larger than \(limit) bytes"
        case .invalidUTF8: return "text message is not valid UTF-8"
        case .invalidLength: return "frame length is not minimally encoded or too large"
        }
    }
}

enum Opcode: UInt8 {
    case continuation = 0x0, text = 0x1, binary = 0x2, close = 0x8, ping = 0x9, pong = 0xA
}

/// Reassembles messages from server frames. Holds at most one partial frame plus one partial
/// message, bounded by `messageLimit`.
public struct WebSocketFrameReader: Sendable {
    public let messageLimit: Int
    /// A message over `messageLimit` but not over this is read past: its bytes are dropped as
    /// they arrive and it comes out as `.skipped`, and the connection goes on. A larger one (or
    /// any, when this is not above `messageLimit`) is a protocol error.
    public let skipLimit: Int
    private var buffer: [UInt8] = []
    private var start = 0
    private var fragments: [UInt8] = []
    private var fragmentOpcode: Opcode? = nil
    /// The message being read past, if any.
    private var skip: Skip? = nil

    private struct Skip {
        /// Bytes of the message dropped so far.
        var dropped: Int
        /// Bytes of its current frame still to drop.
        var frameLeft: Int
        /// The current frame ends the message.
        var last: Bool
    }

    public init(messageLimit: Int = 16 << 20, skipLimit: Int = 0) {
        self.messageLimit = messageLimit
        self.skipLimit = skipLimit
    }

    /// Bytes held but not yet returned as messages.
    public var bufferedCount: Int { buffer.count - start + fragments.count }

    public mutating func feed<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        if start > 0 && start >= buffer.count / 2 {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole message, nil when more bytes are needed. After a throw the connection is
    /// broken: the caller must close it.
    public mutating func next() throws(WebSocketProtocolError) -> WebSocketMessage? {
        while true {
            if var s = skip, s.frameLeft > 0 || s.last {
                let n = min(buffer.count - start, s.frameLeft)
                start += n
                s.dropped += n
                s.frameLeft -= n
                skip = s
                if s.frameLeft > 0 { return nil }
                if s.last {
                    skip = nil
                    releaseConsumedBuffer()
                    return .skipped(bytes: s.dropped)
                }
                continue
            }
            switch try parseFrame() {
            case nil: return nil
            case .skipping?: continue
            case .frame(let frame)?:
                if let message = try assemble(frame) {
                    releaseConsumedBuffer()
                    return message
                }
            }
        }
    }

    /// Once every byte held is returned, a buffer grown for a large message is let go: it would
    /// otherwise stay allocated at that size for the life of the connection.
    private mutating func releaseConsumedBuffer() {
        guard start == buffer.count, buffer.capacity > 1 << 16 else { return }
        buffer = []
        start = 0
    }

    /// Bytes the reader holds allocated (for tests of its memory).
    public var capacity: Int { buffer.capacity + fragments.capacity }

    private struct Frame {
        let fin: Bool
        let opcode: Opcode
        let payload: ArraySlice<UInt8>
    }

    private enum Parsed {
        case frame(Frame)
        /// A frame whose payload is dropped as it arrives (`skip`).
        case skipping
    }

    /// The next frame, nil when more bytes are needed.
    private mutating func parseFrame() throws(WebSocketProtocolError) -> Parsed? {
        let avail = buffer.count - start
        guard avail >= 2 else { return nil }
        let b0 = buffer[start], b1 = buffer[start + 1]
        if b0 & 0x70 != 0 { throw .reservedBitsSet }
        guard let opcode = Opcode(rawValue: b0 & 0x0F) else { throw .unknownOpcode(b0 & 0x0F) }
        if b1 & 0x80 != 0 { throw .maskedServerFrame }
        var header = 2
        var length = Int(b1 & 0x7F)
        if length == 126 {
            guard avail >= 4 else { return nil }
            length = Int(buffer[start + 2]) << 8 | Int(buffer[start + 3])
            if length < 126 { throw .invalidLength }
            header = 4
        } else if length == 127 {
            guard avail >= 10 else { return nil }
            var l: UInt64 = 0
            for i in 0..<8 { l = l << 8 | UInt64(buffer[start + 2 + i]) }
            if l >> 63 != 0 || l <= 0xFFFF { throw .invalidLength }
            guard l <= UInt64(max(messageLimit, skipLimit)) else { throw .messageTooLarge(limit: messageLimit) }
            length = Int(l)
            header = 10
        }
        let isControl = opcode.rawValue & 0x8 != 0
        if isControl {
            if length > 125 { throw .controlFrameTooLong(length) }
            if b0 & 0x80 == 0 { throw .fragmentedControlFrame }
        } else if let s = skip {
            // The rest of a message being read past: its continuation frames go the same way.
            guard opcode == .continuation else { throw .expectedContinuation }
            guard s.dropped + length <= skipLimit else { throw .messageTooLarge(limit: messageLimit) }
            start += header
            skip = Skip(dropped: s.dropped, frameLeft: length, last: b0 & 0x80 != 0)
            return .skipping
        } else if length > messageLimit || fragments.count + length > messageLimit {
            guard fragments.count + length <= skipLimit else { throw .messageTooLarge(limit: messageLimit) }
            if opcode == .continuation && fragmentOpcode == nil { throw .unexpectedContinuation }
            if opcode != .continuation && fragmentOpcode != nil { throw .expectedContinuation }
            start += header
            skip = Skip(dropped: fragments.count, frameLeft: length, last: b0 & 0x80 != 0)
            fragments = []
            fragmentOpcode = nil
            return .skipping
        }
        guard avail >= header + length else { return nil }
        let from = start + header
        let payload = buffer[from..<(from + length)]
        start = from + length
        return .frame(Frame(fin: b0 & 0x80 != 0, opcode: opcode, payload: payload))
    }

    private mutating func assemble(_ f: Frame) throws(WebSocketProtocolError) -> WebSocketMessage? {
        switch f.opcode {
        case .ping: return .ping(Array(f.payload))
        case .pong: return .pong(Array(f.payload))
        case .close:
            guard f.payload.count >= 2 else { return .close(code: 1005, reason: "") }
            let code = UInt16(f.payload[f.payload.startIndex]) << 8
                | UInt16(f.payload[f.payload.startIndex + 1])
            let reason = String(validating: f.payload.dropFirst(2), as: UTF8.self) ?? ""
            return .close(code: code, reason: reason)
        case .text, .binary:
            if fragmentOpcode != nil { throw .expectedContinuation }
            if f.fin { return try message(f.opcode, f.payload) }
            fragmentOpcode = f.opcode
            fragments = Array(f.payload)
            return nil
        case .continuation:
            guard let op = fragmentOpcode else { throw .unexpectedContinuation }
            fragments.append(contentsOf: f.payload)
            guard f.fin else { return nil }
            let whole = fragments
            fragments = []
            fragmentOpcode = nil
            return try message(op, whole[...])
        }
    }

    private func message(_ op: Opcode, _ payload: ArraySlice<UInt8>) throws(WebSocketProtocolError)
        -> WebSocketMessage
    {
        if op == .binary { return .binary(Array(payload)) }
        guard let text = String(validating: payload, as: UTF8.self) else { throw .invalidUTF8 }
        return .text(text)
    }
}

/// Builds one masked client frame (clients must mask every frame, RFC 6455 §5.3).
public func webSocketClientFrame(opcode: UInt8, payload: [UInt8], fin: Bool = true,
                                 mask: [UInt8]? = nil) -> [UInt8]
{
    let key = mask ?? (0..<4).map { _ in UInt8.random(in: 0...255) }
    var out: [UInt8] = [(fin ? 0x80 : 0) | (opcode & 0x0F)]
    out.reserveCapacity(payload.count + 14)
    let n = payload.count
    if n < 126 {
        out.append(0x80 | UInt8(n))
    } else if n <= 0xFFFF {
        out += [0x80 | 126, UInt8(n >> 8), UInt8(n & 0xFF)]
    } else {
        out.append(0x80 | 127)
        for i in (0..<8).reversed() { out.append(UInt8(truncatingIfNeeded: UInt64(n) >> (UInt64(i) * 8))) }
    }
    out += key
    for (i, b) in payload.enumerated() { out.append(b ^ key[i & 3]) }
    return out
}
