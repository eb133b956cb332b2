import Support

/// Decoded frames to the sound server, on the decoder thread: converts with the software volume straight
/// into the sound server's memory, holds the join buffer, reopens the sink on a format change, waits (in
/// the `AudioLoop`) for the server to ask for more, keeps the heard delay, and announces `.playing` once
/// per connection. One per connection; the sink outlives it (the player hands it on). Not thread-safe.
final class StreamOutput: BurstWatcher {
    struct Settings {
        var joinKeepMs: Int
        var sinkName: String?
        var server: String?
        /// `on_output_lost` now (read when the output goes: a reload may have changed it).
        var lostAction: () -> OutputLostAction
        /// Track changes to look for in the audio, and where the answers go (decoder thread).
        var boundaries: BoundaryRequests? = nil
        var onBoundary: (BoundaryHeard) -> Void = { _ in }
    }
    private var connection: StreamConnection
    private let settings: Settings
    private let loop: AudioLoop
    let stats: StreamStats
    private let gain: Gain
    private let onPlaying: () -> Void
    private let onOutputLost: (String) -> Void
    /// The sound output; handed from one connection's output to the next.
    private(set) var sink: PulseSink?
    private(set) var joining = true
    private var join: JoinBuffer
    private var delay = HeardDelayEstimator()
    private var boundaryWatch = BoundaryWatch()
    var cushion: OutputCushion
    /// The changes the server announced, for the cushion's cut before each.
    private var changes: ComingChanges { stats.comingChanges }
    let converter = PCMConverter()
    var pcm: [UInt8] = []
    private var announcedPlaying = false
    private var loggedDelayMs = 0
    /// Paused with the connection kept warm: the sink corked and flushed, the newest
    /// `joinKeepMs` of decoded audio held in `join` for the Play that resumes it.
    private var warm = false
    /// The connection's pauses this output has followed (`StreamConnection.warmth`).
    private var pausesSeen = 0
    /// The newest `joinKeepMs` written to the sound server, which a pause flushes unheard.
    var written: JoinBuffer

    /// `onPlaying`: the first audio of this connection is about to be written. `onOutputLost`:
    /// the sink went away while playing (`OutputLostAction.pause`), already silent.
    init(connection: StreamConnection, settings: Settings, sink: PulseSink?, loop: AudioLoop, joinStartedMs: Int,
         stats: StreamStats, gain: Gain, onPlaying: @escaping () -> Void, onOutputLost: @escaping (String) -> Void) {
        self.connection = connection
        self.settings = settings
        // The decoder loop lets go of a sink the next connection may not play on (`letGoStale`).
        self.sink = sink
        self.loop = loop
        self.stats = stats
        self.gain = gain
        self.onPlaying = onPlaying
        self.onOutputLost = onOutputLost
        join = JoinBuffer(keepMs: settings.joinKeepMs, startedMs: joinStartedMs)
        cushion = OutputCushion(learned: stats.cushionTarget)
        written = JoinBuffer(keepMs: settings.joinKeepMs, startedMs: joinStartedMs)
        sink?.onOutputLost = onOutputLost
        stats.delayUnmeasured()
    }

    /// libFLAC's frame callback; `arrivalMs`: when the frame's bytes arrived; `skippedSamples`:
    /// audio before it that the input skipped undecoded. False stops the decoder (the
    /// connection was cancelled or the sound output failed).
    func write(_ f: DecodedFrame, arrivalMs: Int, skippedSamples: Int64 = 0) -> Bool {
        if connection.ring.isCancelled { return false }
        if skippedSamples > 0 {
            let samples = Int(clamping: skippedSamples)
            delay.skipped(samples: samples, sampleRate: f.format.sampleRate)
            join.skippedUndecoded(ms: f.format.milliseconds(frames: samples))
        }
        stats.decoded(samples: f.samples, format: f.format)
        let atMs = delay.decodedMs
        delay.frameDecoded(samples: f.samples, sampleRate: f.format.sampleRate, arrivalMs: arrivalMs)
        cushion.arrived(atMs: arrivalMs)
        if let requests = settings.boundaries, requests.watching {
            boundaryWatch.decoded(f, atMs: atMs, requests: requests, originMs: delay.onTimeOriginMs,
                                  nowMs: monotonicMs(), answer: settings.onBoundary)
        }
        let onTimeMs = delay.onTimeMs(atPositionMs: atMs)
        let level = gain.value(onTimeMs: onTimeMs)
        while true {
            if followWarmth() || joining {
                converter.convert(f, volume: level, into: &pcm)
                muteHeld(&pcm, f, onTimeMs: onTimeMs)
                join.add(pcm, format: f.format, ms: f.format.milliseconds(frames: f.samples))
                if !warm && join.isOverdue(nowMs: monotonicMs()) { endJoin() }
                return !connection.ring.isCancelled
            }
            // Behind live (a stall's burst waits in the input): digital silence, and the end of a
            // track before a change the server announced, are dropped, not played.
            if cushion.drop(f, arrivalMs: arrivalMs, onTimeMs: onTimeMs, changes: changes.take(), nowMs: monotonicMs(), stats: stats) {
                delay.resumed()
                return !connection.ring.isCancelled
            }
            rebufferAfterAStall(f.format)
            let padding = cushion.padding(f, onTimeMs: onTimeMs, nowMs: monotonicMs(), stats: stats), before = cushion.lastDelayMs
            if padding.silenceMs > 0, writeSilence(padding.silenceMs, format: f.format) { cushion.grew(padding.silenceMs, beforeMs: before, stats: stats) }
            if let sink = waitForRoom(f.samples * f.format.sinkBytesPerFrame, format: f.format) {
                return play(f, level: level, mutedMs: padding.mutedMs, on: sink)
            }
            // A pause that keeps the connection came meanwhile: this frame is held instead.
            guard !connection.ring.isCancelled, pausedSinceLook else { return false }
        }
    }

    /// When the start of the newest `ms` written will be heard (monotonic ms): after what the
    /// sound server holds and what is still to go to it. Nil without a timing report.
    func heardAtMs(ofNewest ms: Int) -> Int? { sink?.heardAtMs(ofNewest: ms) }

    /// A switch took over from the connection at a frame boundary: the same audio goes on from
    /// `next`, through this output (its sink, join, heard delay and boundary watch carry on).
    func follow(_ next: StreamConnection) {
        connection = next
        pausesSeen = next.warmth.pauses
    }

    /// The data paused: the burst is over if a join buffer's worth is held. (Also the end of
    /// a warm pause's time: `wakeAtMs`.)
    func burstPaused() {
        followWarmth()
        if joining && join.isFull { endJoin() }
    }

    /// The input waits for bytes: what is converted goes to the server now, not after the wait.
    /// A Play or a pause that woke the wait takes effect here, not at the next frame.
    func inputWaits() {
        followWarmth()
        sink?.commit()
    }

    /// While kept warm, when the input's waits must end for a look at the connection.
    var wakeAtMs: Int? { warm ? connection.warmth.untilMs : nil }

    private var pausedSinceLook: Bool { connection.warmth.pauses != pausesSeen }

    /// Follows the pauses that keep the connection warm: silence when one begins (the decoder
    /// goes on, holding the newest audio), what is held written at once when a Play ends it,
    /// the connection ended when its time is up. True while warm.
    @discardableResult
    private func followWarmth() -> Bool {
        let (pauses, untilMs) = connection.warmth
        if pauses != pausesSeen {
            pausesSeen = pauses
            warm = true
            joining = false
            sink?.pause()
            announcedPlaying = false
            // What the flush dropped unheard, and what was still to be written, is held first: a
            // Play soon after still has a prebuffer's worth to start at once with, and the music
            // goes on where it stopped.
            var held = written
            if let format = join.format {
                while let chunk = join.takeFirst() { held.add(chunk, format: format, ms: format.milliseconds(bytes: chunk.count)) }
            }
            join = held
            written = JoinBuffer(keepMs: settings.joinKeepMs, startedMs: monotonicMs())
            stats.outputStopped()
        }
        guard warm else { return false }
        guard untilMs == nil else {
            if connection.expireWarm(nowMs: monotonicMs()) { Log.info("stream: kept warm long enough after the pause; disconnected") }
            return true
        }
        warm = false
        // At the live edge: what was held plays at once and fills the sound server's prebuffer;
        // the delay's next sample is taken whole (the sink's buffer starts again from empty).
        Log.info("stream: resumed the connection kept warm after \(monotonicMs() - written.startedMs) ms; \(join.heldMs) ms held")
        delay.resumed()
        playHeld()
        return false
    }

    /// The connection's bytes ended: what the join holds plays, unless it was cancelled.
    func finish() {
        if joining && !connection.ring.isCancelled { endJoin() }
        sink?.commit()
    }

    private func endJoin() {
        guard joining else { return }
        joining = false
        stats.joined(skippedMs: join.skippedMs)
        if join.skippedMs > 0 { Log.info("stream: joined \(join.skippedMs) ms behind live; skipped that to play near live") }
        playHeld()
    }

    /// What `join` holds, to the sink.
    private func playHeld() {
        guard let format = join.format else { return }
        // What is still held counts in the delay until it is written (see `updateDelay`).
        while let chunk = join.takeFirst() {
            // Not written (cancelled, failed, or paused: then it is held again).
            guard let sink = waitForRoom(chunk.count, format: format) else { return }
            chunk.withUnsafeBytes { sink.write(copyOf: $0) }
            written.add(chunk, format: format, ms: format.milliseconds(bytes: chunk.count))
            guard played(chunk.count, format: format, sink: sink) else { return }
        }
        sink?.commit()
    }

    /// The sink for `format`, once the server asked for `bytes` more (waiting in the loop until
    /// it does). Nil when the connection was cancelled or the sound output failed.
    func waitForRoom(_ bytes: Int, format: AudioFormat) -> PulseSink? {
        guard let sink = openSink(format) else { return nil }
        if !announcedPlaying {
            // Once per connection: later writes must not hide a "reconnecting" that the network
            // thread reported while buffered audio still plays out.
            announcedPlaying = true
            sink.resume()
            onPlaying()
        }
        // The server asks for at least a piece at a time; a frame larger than that fits once
        // the buffer has room for it.
        let wanted = min(bytes, max(sink.pieceBytes, 1))
        while sink.writable < wanted {
            sink.commit()
            if connection.ring.isCancelled || pausedSinceLook { return nil }
            if let failure = sink.failure {
                self.sink = nil
                _ = failed(failure)
                return nil
            }
            loop.wait(deadlineMs: nil)
        }
        if connection.ring.isCancelled || pausedSinceLook { return nil }
        return sink
    }

    /// `bytes` of `format` went to the sink: counts them and updates the delay.
    func played(_ bytes: Int, format: AudioFormat, sink: PulseSink) -> Bool {
        if let failure = sink.failure {
            self.sink = nil
            return failed(failure)
        }
        connection.addPlayed(format.milliseconds(frames: bytes / format.sinkBytesPerFrame))
        updateDelay(sink)
        return !connection.ring.isCancelled
    }

    /// The sink for `format`, opened anew when the format changed or the old one failed.
    private func openSink(_ format: AudioFormat) -> PulseSink? {
        if let sink, sink.format == format, sink.failure == nil, sink.lost == nil { return sink }
        sink = nil
        do throws(SinkError) {
            let s = try PulseSink.open(format, server: settings.server, sink: settings.sinkName, loop: loop, lostAction: settings.lostAction)
            s.onOutputLost = onOutputLost
            sink = s
        } catch {
            // The output asked for went away before the stream reached it: as when it goes while
            // playing (`on_output_lost = pause`), this computer pauses instead of retrying.
            if error.missing && settings.lostAction() == .pause { onOutputLost(error.message) } else { _ = failed(error) }
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

    /// From the server's timing report, extrapolated by the clock: no round trip per write.
    func updateDelay(_ sink: PulseSink) {
        guard let soundServerUs = sink.latencyUs() else { return }
        let soundServerMs = soundServerUs / 1000
        let format = sink.format
        let unwrittenMs = format.milliseconds(frames: sink.pendingBytes / format.sinkBytesPerFrame)
        guard let ms = delay.delayMs(nowMs: monotonicMs(), soundServerMs: soundServerMs,
                                     unwrittenMs: unwrittenMs, heldMs: join.heldMs) else { return }
        cushion.measured(delayMs: ms, stats: stats, nowMs: monotonicMs())
        // A jump of the measure is said with its parts (--verbose): what moved it.
        if abs(ms - loggedDelayMs) > 250 {
            loggedDelayMs = ms
            Log.debug("stream: heard delay \(ms) ms: decoded audio \(Int(delay.lateMs)) ms late, \(soundServerMs) ms in the sound server, \(unwrittenMs) unwritten, \(join.heldMs) held")
        }
        stats.output(bufferedMs: soundServerMs, delayMs: ms)
    }
}
