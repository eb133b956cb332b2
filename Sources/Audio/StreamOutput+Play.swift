import Support

extension StreamOutput {
    /// `f` to the sink, its first `mutedMs` as silence (`ChangePad`).
    func play(_ f: DecodedFrame, level: Double, mutedMs: Int, on sink: PulseSink) -> Bool {
        let bytes = f.samples * f.format.sinkBytesPerFrame
        let ms = f.format.milliseconds(frames: f.samples)
        let muted = Self.mutedBytes(mutedMs, of: f)
        if let memory = sink.reserve(bytes) {
            converter.convert(f, volume: level, into: memory)
            UnsafeMutableRawBufferPointer(rebasing: memory[..<muted]).initializeMemory(as: UInt8.self, repeating: 0)
            written.add(Array(UnsafeRawBufferPointer(memory)), format: f.format, ms: ms)
            sink.filled(bytes)
        } else {
            // A frame larger than libpulse's memory block: through a copy.
            converter.convert(f, volume: level, into: &pcm)
            Self.mute(&pcm, bytes: muted)
            written.add(pcm, format: f.format, ms: ms)
            pcm.withUnsafeBytes { sink.write(copyOf: $0) }
        }
        return played(bytes, format: f.format, sink: sink)
    }

    /// A frame held while paused (kept warm) mutes what lies within the window being silenced
    /// around a change (`ChangePad`): what was written of it is, and it is heard with it on Play.
    func muteHeld(_ pcm: inout [UInt8], _ f: DecodedFrame, onTimeMs: Int?) {
        let mutedMs = cushion.pad.mutedMs(onTimeMs: onTimeMs, frameMs: f.format.milliseconds(frames: f.samples))
        Self.mute(&pcm, bytes: Self.mutedBytes(mutedMs, of: f))
    }

    /// The bytes of `f` converted for the sink that its first `mutedMs` take: all of it when
    /// they cover its length (whole sample frames either way).
    static func mutedBytes(_ mutedMs: Int, of f: DecodedFrame) -> Int {
        let bytes = f.samples * f.format.sinkBytesPerFrame
        guard mutedMs > 0 else { return 0 }
        return mutedMs >= f.format.milliseconds(frames: f.samples) ? bytes : min(bytes, f.format.sinkBytes(milliseconds: mutedMs))
    }

    static func mute(_ pcm: inout [UInt8], bytes: Int) {
        let n = min(max(0, bytes), pcm.count)
        pcm.replaceSubrange(0..<n, with: repeatElement(0, count: n))
    }

    /// The link stalled beyond what was here, and the frame about to be played is the first
    /// after it (`OutputCushion.rebufferMs`): silence goes first, so that the music goes on the
    /// cushion's target behind the connection's least delay. The stall is heard once, that much
    /// longer, and the next one of its length is ridden out, where going on at once left a
    /// backlog of the stall alone and the next stall, a page later than the last, was heard
    /// again. The silence falls within the gap the stall made, never within the music.
    func rebufferAfterAStall(_ format: AudioFormat) {
        let holdMs = cushion.rebufferMs(since: stats.snapshot, nowMs: monotonicMs())
        guard holdMs > 0, writeSilence(holdMs, format: format) else { return }
        Log.info("stream: the link stalled beyond what was here: \(holdMs) ms more held before the music goes on, "
                 + "a cushion of \(cushion.target.targetMs) ms against the next stall")
    }

    /// `ms` of silence to the sink (at most the cushion's cap), the heard delay measured with
    /// each piece: titles held for it move as it is written, and the time spent waiting for room
    /// is no underrun. False when the connection was cancelled or paused, or the sound output
    /// failed, on the way.
    @discardableResult
    func writeSilence(_ ms: Int, format: AudioFormat) -> Bool {
        guard ms > 0, format.sinkBytesPerFrame > 0 else { return true }
        var left = format.sinkBytes(milliseconds: min(ms, StreamTuning.cushionCapMs))
        while left > 0 {
            guard let sink = waitForRoom(min(left, format.sinkBytes(milliseconds: StreamTuning.pieceMs)), format: format) else { return false }
            let n = min(left, sink.writable) / format.sinkBytesPerFrame * format.sinkBytesPerFrame
            guard n > 0 else { return false }
            if let memory = sink.reserve(n) {
                memory.initializeMemory(as: UInt8.self, repeating: 0)
                sink.filled(n)
            } else {
                [UInt8](repeating: 0, count: n).withUnsafeBytes { sink.write(copyOf: $0) }
            }
            left -= n
            sink.commit()
            updateDelay(sink)
        }
        return true
    }
}
