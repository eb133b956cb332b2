import Support

/// Decoded frames to the sound server, on the decoder thread: converts with the software volume,
/// holds the join buffer, reopens the sink on a format change, writes in request-sized pieces so
/// that a cancelled connection stops within one, keeps the heard delay, and announces `.playing`
/// once per connection. One per connection; the sink outlives it (the player hands it on).
/// Not thread-safe.
final class StreamOutput: BurstWatcher {
    struct Settings {
        var joinKeepMs: Int
        var sinkName: String?
        var server: String?
    }

    private let connection: StreamConnection
    private let settings: Settings
    private let stats: StreamStats
    private let gain: Gain
    private let onPlaying: () -> Void
    /// The sound output; handed from one connection's output to the next.
    private(set) var sink: PulseSink?
    private(set) var joining = true
    private var join: JoinBuffer
    private var delay = HeardDelayEstimator()
    private let converter = PCMConverter()
    private var pcm: [UInt8] = []
    private var announcedPlaying = false

    /// `onPlaying`: the first audio of this connection is about to be written.
    init(connection: StreamConnection, settings: Settings, sink: PulseSink?, joinStartedMs: Int,
         stats: StreamStats, gain: Gain, onPlaying: @escaping () -> Void) {
        self.connection = connection
        self.settings = settings
        self.sink = sink
        self.stats = stats
        self.gain = gain
        self.onPlaying = onPlaying
        join = JoinBuffer(keepMs: settings.joinKeepMs, startedMs: joinStartedMs)
    }

    /// libFLAC's frame callback; `arrivalMs`: when the frame's bytes arrived. False stops the
    /// decoder (the connection was cancelled or the sound output failed).
    func write(_ f: DecodedFrame, arrivalMs: Int) -> Bool {
        if connection.ring.isCancelled { return false }
        stats.decoded(samples: f.samples, format: f.format)
        converter.convert(f, volume: gain.value, into: &pcm)
        delay.frameDecoded(samples: f.samples, sampleRate: f.format.sampleRate, arrivalMs: arrivalMs)
        if joining {
            join.add(pcm, format: f.format, ms: f.format.milliseconds(frames: f.samples))
            if join.isOverdue(nowMs: monotonicMs()) { endJoin() }
            return !connection.ring.isCancelled
        }
        return play(pcm, format: f.format)
    }

    /// The data paused: the burst is over if a join buffer's worth is held.
    func burstPaused() {
        if joining && join.isFull { endJoin() }
    }

    /// The connection's bytes ended: what the join holds plays, unless it was cancelled.
    func finish() {
        if joining && !connection.ring.isCancelled { endJoin() }
    }

    private func endJoin() {
        guard joining else { return }
        joining = false
        stats.joined(skippedMs: join.skippedMs)
        if join.skippedMs > 0 { Log.info("stream: joined \(join.skippedMs) ms behind live; skipped that to play near live") }
        guard let format = join.format else { return }
        // What is still held counts in the delay until it is written (see `updateDelay`).
        while let chunk = join.takeFirst() {
            guard play(chunk, format: format) else {
                join.removeAll()
                return
            }
        }
    }

    /// Writes to the sink in pieces of PulseSink's request size (`pieceMs`): a pause is noticed
    /// between two (and the sink is flushed), while neither thread is woken for every few samples.
    private func play(_ bytes: [UInt8], format: AudioFormat) -> Bool {
        guard let sink = openSink(format) else { return false }
        if !announcedPlaying {
            // Once per connection: later writes must not hide a "reconnecting" that the network
            // thread reported while buffered audio still plays out.
            announcedPlaying = true
            onPlaying()
        }
        let piece = sink.pieceBytes
        var offset = 0
        while offset < bytes.count {
            if connection.ring.isCancelled { return false }
            let n = min(piece, bytes.count - offset)
            // withUnsafeBytes rethrows untyped errors: the typed one comes out as a value.
            let failure: SinkError? = bytes.withUnsafeBytes { raw in
                do throws(SinkError) {
                    try sink.write(UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + n)]))
                    return nil
                } catch { return error }
            }
            if let failure {
                self.sink = nil
                return failed(failure)
            }
            offset += n
            if offset < bytes.count {
                updateDelay(sink, unwrittenMs: format.milliseconds(frames: (bytes.count - offset) / format.sinkBytesPerFrame))
            }
        }
        connection.addPlayed(format.milliseconds(frames: bytes.count / format.sinkBytesPerFrame))
        updateDelay(sink, unwrittenMs: 0)
        return true
    }

    /// The sink for `format`, opened anew when the format changed.
    private func openSink(_ format: AudioFormat) -> PulseSink? {
        if let sink, sink.format == format { return sink }
        sink = nil
        do throws(SinkError) {
            sink = try PulseSink(format: format, server: settings.server, sink: settings.sinkName)
        } catch {
            _ = failed(error)
            return nil
        }
        Log.info("stream: playing \(format)")
        return sink
    }

    /// The sound server went away or refused: this connection ends and the usual backoff
    /// applies (it may be back soon).
    private func failed(_ error: SinkError) -> Bool {
        stats.note(error: error.message)
        Log.error("stream: \(error.message)")
        connection.fail(error.message, permanent: false)
        return false
    }

    /// pa_simple_get_latency is interpolated by libpulse: no round trip to the sound server.
    private func updateDelay(_ sink: PulseSink, unwrittenMs: Int) {
        let soundServerMs = sink.latencyUs() / 1000
        guard let ms = delay.delayMs(nowMs: monotonicMs(), soundServerMs: soundServerMs,
                                     unwrittenMs: unwrittenMs, heldMs: join.heldMs) else { return }
        stats.output(bufferedMs: soundServerMs, delayMs: ms)
    }
}
