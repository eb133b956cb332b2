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
            chunks.removeAll()
            heldMs = 0
            self.format = format
        }
        chunks.append((pcm, ms))
        heldMs += ms
        while let first = chunks.first, heldMs - first.ms >= keepMs {
            chunks.removeFirst()
            heldMs -= first.ms
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
        return first.pcm
    }

    mutating func removeAll() {
        chunks.removeAll()
        heldMs = 0
    }
}
