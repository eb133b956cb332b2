/// The decoded audio of Icecast's connect burst, of which only the newest `keepMs` is played:
/// the burst is seconds of old audio, and playing all of it would put this computer that far
/// behind the house. Counts what it drops. Pure; the output owns it on the decoder thread.
struct JoinBuffer {
    let keepMs: Int
    /// When the join started (the first byte, monotonic ms); it ends by `capMs` after that.
    let startedMs: Int
    let capMs: Int
    /// The format of the chunks held; a different one starts the buffer over.
    private(set) var format: AudioFormat? = nil
    private var chunks: [(pcm: [UInt8], ms: Int)] = []
    /// Audio held, ms.
    private(set) var heldMs = 0
    /// Audio held, bytes (a frame shorter than 1 ms counts 0 ms, not 0 bytes).
    private var heldBytes = 0
    /// Audio dropped because newer audio followed, ms.
    private(set) var skippedMs = 0

    init(keepMs: Int, startedMs: Int, capMs: Int = StreamTuning.joinCapMs) {
        self.keepMs = keepMs
        self.startedMs = startedMs
        self.capMs = capMs
    }

    /// Holds one decoded frame of `ms` milliseconds, dropping the oldest frames that the newer
    /// ones make unneeded (whole frames: what is held stays at least `keepMs` once it was).
    mutating func add(_ pcm: [UInt8], format: AudioFormat, ms: Int) {
        if format != self.format {
            removeAll()
            self.format = format
        }
        chunks.append((pcm, ms))
        heldMs += ms
        heldBytes += pcm.count
        // By the ms, and bounded by bytes too: frames shorter than 1 ms (a stream of 32-sample
        // blocks) count 0 ms each.
        let boundBytes = format.sinkBytes(milliseconds: keepMs).multiplied(saturating: 2)
        while let first = chunks.first, heldMs - first.ms >= keepMs || heldBytes - first.pcm.count >= boundBytes {
            chunks.removeFirst()
            heldMs -= first.ms
            heldBytes -= first.pcm.count
            skippedMs += first.ms
        }
    }

    /// Audio the input skipped before decoding (StreamInput+Join) counts as dropped too.
    mutating func skippedUndecoded(ms: Int) { skippedMs += max(0, ms) }

    /// A pause in the data ends the join only once this much is held.
    var isFull: Bool { heldMs >= keepMs }

    /// The join has taken longer than `capMs`: play what is held, burst over or not.
    func isOverdue(nowMs: Int) -> Bool { nowMs - startedMs > capMs }

    /// The oldest chunk, to be played; what is left stays counted in `heldMs`.
    mutating func takeFirst() -> [UInt8]? {
        guard !chunks.isEmpty else { return nil }
        let first = chunks.removeFirst()
        heldMs -= first.ms
        heldBytes -= first.pcm.count
        return first.pcm
    }

    mutating func removeAll() {
        chunks.removeAll()
        heldMs = 0
        heldBytes = 0
    }
}
