/// Decoded audio on its way to the sound server, in the sound server's sample format: what the
/// playout holds (the join, a warm pause), what waits for room, and the newest audio written,
/// which a pause flushes from the sound server unheard (a Play soon after plays it again, so that
/// it starts at once with a prebuffer's worth). Kept in whole segments (a frame, a stretch of
/// silence), contiguous in one buffer, so that all that waits goes in one write. Bounded by what
/// the playout holds; on the decoder thread.
struct OutputQueue {
    private struct Segment {
        var offset: Int
        var bytes: Int
        var ms: Int
    }

    private(set) var format: AudioFormat? = nil
    private var storage: [UInt8] = []
    /// Kept segments, oldest first from `first`: written from `first` to `unwritten`, the rest not.
    private var segments: [Segment] = []
    private var first = 0
    private var unwritten = 0
    /// Bytes of `segments[unwritten]` already written.
    private var partial = 0
    private var end = 0
    /// The segments not all written, ms (their own lengths).
    private var unwrittenMs = 0
    /// Not yet written, ms: the segments' own lengths, less what is written of the first.
    var heldMs: Int { max(0, unwrittenMs - (format?.milliseconds(bytes: partial) ?? 0)) }
    /// Dropped because newer audio followed while holding, ms.
    private(set) var droppedMs = 0

    /// Nothing waits to be written.
    var isEmpty: Bool { unwritten == segments.count }
    var heldBytes: Int { end - (unwritten < segments.count ? segments[unwritten].offset + partial : end) }

    /// Audio of `format` from now on: what is kept of another format is let go (it cannot play
    /// on the same stream).
    mutating func use(_ format: AudioFormat) {
        guard format != self.format else { return }
        removeAll()
        self.format = format
    }

    mutating func removeAll() {
        segments.removeAll(keepingCapacity: true)
        (first, unwritten, partial, end, unwrittenMs) = (0, 0, 0, 0, 0)
    }

    /// Appends `bytes` (whole sample frames, `ms` long), filled by `fill` in place.
    mutating func append(bytes: Int, ms: Int, fill: (UnsafeMutableRawBufferPointer) -> Void) {
        guard bytes > 0 else { return }
        makeRoom(bytes)
        storage.withUnsafeMutableBytes { fill(UnsafeMutableRawBufferPointer(rebasing: $0[end..<(end + bytes)])) }
        segments.append(Segment(offset: end, bytes: bytes, ms: ms))
        end += bytes
        unwrittenMs += ms
    }

    /// `ms` of silence.
    mutating func appendSilence(ms: Int) {
        guard let format, ms > 0 else { return }
        append(bytes: format.sinkBytes(milliseconds: ms), ms: ms) { $0.initializeMemory(as: UInt8.self, repeating: 0) }
    }

    /// While holding: the oldest segments not written are let go while the newer ones hold at
    /// least `keepMs` (whole segments: what is held stays at least `keepMs` once it was), and by
    /// bytes too (twice the keep): segments shorter than 1 ms count 0 ms each.
    mutating func trim(keepMs: Int) {
        guard let format else { return }
        let boundBytes = format.sinkBytes(milliseconds: keepMs).multiplied(saturating: 2)
        while unwritten < segments.count, partial == 0 {
            let s = segments[unwritten]
            guard unwrittenMs - s.ms >= keepMs || heldBytes - s.bytes >= boundBytes else { break }
            unwritten += 1
            first = unwritten
            unwrittenMs -= s.ms
            droppedMs = droppedMs.adding(saturating: s.ms)
        }
    }

    /// The bytes waiting, oldest first, at most `max` (whole sample frames).
    func waiting(max: Int) -> UnsafeRawBufferPointer? {
        guard unwritten < segments.count, let format else { return nil }
        let from = segments[unwritten].offset + partial
        let n = min(max, end - from) / format.sinkBytesPerFrame * format.sinkBytesPerFrame
        guard n > 0 else { return nil }
        return storage.withUnsafeBytes { UnsafeRawBufferPointer(rebasing: $0[from..<(from + n)]) }
    }

    /// `n` bytes of what waits were written; the written ones beyond the newest `keepMs` go.
    mutating func wrote(_ n: Int, keepMs: Int) {
        var left = n
        while left > 0, unwritten < segments.count {
            let s = segments[unwritten]
            let take = min(left, s.bytes - partial)
            partial += take
            left -= take
            if partial == s.bytes {
                partial = 0
                unwritten += 1
                unwrittenMs -= s.ms
            }
        }
        var tailMs = segments[first..<unwritten].reduce(0) { $0 + $1.ms }
        while first < unwritten, tailMs - segments[first].ms >= keepMs {
            tailMs -= segments[first].ms
            first += 1
        }
    }

    /// A pause flushed the sound server: what was written and kept is held again before what
    /// waits, and the whole is trimmed to the newest `keepMs`.
    mutating func rewind(keepMs: Int) {
        partial = 0
        unwrittenMs = segments[first...].reduce(0) { $0 + $1.ms }
        unwritten = first
        trim(keepMs: keepMs)
    }

    /// Room for `bytes` after `end`: what is kept moves to the front, or the buffer grows.
    private mutating func makeRoom(_ bytes: Int) {
        if first == segments.count { removeAll() }
        guard end + bytes > storage.count else { return }
        let start = first < segments.count ? segments[first].offset : end
        if start > 0 {
            storage.withUnsafeMutableBytes { b in b.baseAddress!.copyMemory(from: b.baseAddress! + start, byteCount: end - start) }
            segments.removeFirst(first)
            unwritten -= first
            first = 0
            for i in segments.indices { segments[i].offset -= start }
            end -= start
        }
        if end + bytes > storage.count { storage += [UInt8](repeating: 0, count: max(end + bytes - storage.count, storage.count)) }
    }
}
