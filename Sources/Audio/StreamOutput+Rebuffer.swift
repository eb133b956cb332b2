import Support

extension StreamOutput {
    /// The link stalled beyond what was here, and the frame about to be played is the first
    /// after it (`OutputCushion.rebufferMs`): silence goes first, so that the music goes on the
    /// cushion's target behind the connection's least delay. The stall is heard once, that much
    /// longer, and the next one of its length is ridden out, where going on at once left a
    /// backlog of the stall alone and the next stall, a page later than the last, was heard
    /// again. The silence falls within the gap the stall made, never within the music.
    func rebufferAfterAStall(_ format: AudioFormat) {
        let holdMs = cushion.rebufferMs(since: stats.snapshot, nowMs: monotonicMs())
        guard holdMs > 0, format.sinkBytesPerFrame > 0 else { return }
        var left = format.sinkBytes(milliseconds: holdMs)
        while left > 0 {
            guard let sink = waitForRoom(min(left, format.sinkBytes(milliseconds: StreamTuning.pieceMs)), format: format) else { return }
            let n = min(left, sink.writable) / format.sinkBytesPerFrame * format.sinkBytesPerFrame
            guard n > 0 else { return }
            if let memory = sink.reserve(n) {
                memory.initializeMemory(as: UInt8.self, repeating: 0)
                sink.filled(n)
            } else {
                [UInt8](repeating: 0, count: n).withUnsafeBytes { sink.write(copyOf: $0) }
            }
            left -= n
        }
        Log.info("stream: the link stalled beyond what was here: \(holdMs) ms more held before the music goes on, "
                 + "a cushion of \(cushion.target.targetMs) ms against the next stall")
        if let sink { sink.commit(); updateDelay(sink) }
    }
}
