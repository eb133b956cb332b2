import CPulse
@preconcurrency import Glibc
import Support

/// The sink: a PulseAudio (or PipeWire-pulse) playback stream through the asynchronous API, on
/// the decoder thread's `AudioLoop` (no thread of libpulse's own). Its whole contract, as mpv's
/// audio outputs: open (`init`), room (`writable`), `write`, `play`, `pause` (cork and flush; the
/// stream stays for the next Play), the timing report (`latencyUs`), and the output lost
/// (`onOutputLost`, `lost`, `failure`). The only user of libpulse. Not thread-safe: the decoder
/// thread owns it. Frees the stream and its context in `deinit`.
public final class PulseSink {
    /// The sound server refused or went away.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let message: String
        /// The output asked for is not there (a headset unplugged while the stream was on its way).
        public var missing = false
        public var description: String { message }
    }

    let format: AudioFormat
    /// The least room the server asks for at a time (`minreq`): the decoder waits for that much.
    let pieceBytes: Int
    /// The sound server or the stream failed: this sink is done, a new one is needed.
    private(set) var failure: Failure? = nil
    /// The output went away with `pause`: called within `AudioLoop.wait`, corked and flushed.
    var onOutputLost: ((String) -> Void)? = nil
    private(set) var corked = false
    private let loop: AudioLoop
    /// `on_output_lost` now: a reload may change it while this stream plays.
    private let lostAction: () -> OutputLostAction
    private let context: OpaquePointer
    private var stream: OpaquePointer? = nil
    private var timing: OpaquePointer? = nil
    private var timingAskedMs: Int? = nil
    /// Why the output went away while playing (moved, suspended, ended by the server), once it
    /// did: reported once, and the player opens a new stream next time.
    private(set) var lost: String? = nil

    /// `sink`: a sink name (nil: PULSE_SINK or the default). `bufferMs`: the server-side buffer
    /// (`tlength`); `requestMs`: the least free space the server waits for before it asks for
    /// more (`minreq`). With ADJUST_LATENCY PulseAudio keeps the whole latency near `bufferMs`,
    /// running the sink at (bufferMs − 2 × requestMs) / 2 when no other client asks for less.
    /// Waits on `loop` until the stream is ready (a local server answers at once).
    init(format: AudioFormat, server: String?, sink: String?, loop: AudioLoop, lostAction: @escaping () -> OutputLostAction,
         bufferMs: Int = StreamTuning.sinkBufferMs, requestMs: Int = StreamTuning.pieceMs) throws(Failure) {
        self.format = format
        self.loop = loop
        self.lostAction = lostAction
        pieceBytes = format.sinkBytes(milliseconds: requestMs)
        let what = "cannot open the sound output\(sink.map { " '\($0)'" } ?? "")"
        guard let ctx = pa_context_new(loop.api, "Groove Audio") else { throw Failure(message: "\(what): out of memory") }
        context = ctx
        let me = Unmanaged.passUnretained(self).toOpaque()
        pa_context_set_state_callback(ctx, paContextState, me)
        guard pa_context_connect(ctx, server, PA_CONTEXT_NOAUTOSPAWN, nil) >= 0 else { throw error(what) }
        try waitFor(what) { pa_context_get_state(ctx) == PA_CONTEXT_READY }

        var spec = pa_sample_spec()
        spec.format = format.sinkBytesPerSample == 2 ? PA_SAMPLE_S16LE : PA_SAMPLE_S32LE
        spec.rate = UInt32(format.sampleRate)
        spec.channels = UInt8(clamping: format.channels)
        guard let s = pa_stream_new(ctx, "Groove Audio stream", &spec, nil) else { throw error(what) }
        stream = s
        setCallbacks(s, me)
        var attr = pa_buffer_attr()
        attr.maxlength = UInt32.max
        attr.tlength = UInt32(format.sinkBytes(milliseconds: bufferMs))
        // The server's default: playback starts once buffer − request is written. The join at the
        // live edge writes its 500 ms at once, so the first sound is not held back.
        attr.prebuf = UInt32.max
        attr.minreq = UInt32(pieceBytes)
        attr.fragsize = UInt32.max
        // No AUTO_TIMING_UPDATE: libpulse would ask every 1.5 s even while corked, waking an idle
        // bridge; `write` asks while playing (StreamTuning.timingEveryMs). No interpolation:
        // `latencyUs` extrapolates the server's own report, which a smoother would lag behind
        // when the sink's latency changes under the stream.
        // PulseAudio refuses a sink that is not there (no such entity); PipeWire gives the default
        // instead. Either way the output asked for is missing: with `pause`, music must not come
        // out of another one.
        let missing = Failure(message: "\(what): it is not there", missing: true)
        guard pa_stream_connect_playback(s, sink, &attr, PA_STREAM_ADJUST_LATENCY, nil, nil) >= 0 else {
            throw pa_context_errno(ctx) == Int32(PA_ERR_NOENTITY.rawValue) ? missing : error(what)
        }
        do throws(Failure) {
            try waitFor(what) { pa_stream_get_state(s) == PA_STREAM_READY }
        } catch {
            throw pa_context_errno(ctx) == Int32(PA_ERR_NOENTITY.rawValue) ? missing : error
        }
        if isElsewhere(lostAction: lostAction(), sinkName: sink) { throw missing }
    }

    /// The sink the stream plays on now (PulseAudio may have moved it there).
    var device: String? { stream.flatMap { pa_stream_get_device_name($0) }.map { String(cString: $0) } }

    deinit {
        if let timing { pa_operation_unref(timing) }
        if let s = stream {
            setCallbacks(s, nil)
            pa_stream_disconnect(s)
            pa_stream_unref(s)
        }
        pa_context_set_state_callback(context, nil, nil)
        pa_context_disconnect(context)
        pa_context_unref(context)
        // The disconnect messages leave now, not at the next wait.
        loop.runPending()
    }

    private func error(_ what: String) -> Failure {
        Failure(message: "\(what): \(String(cString: pa_strerror(pa_context_errno(context))))")
    }

    private func waitFor(_ what: String, _ ready: () -> Bool) throws(Failure) {
        let deadline = monotonicMs() + StreamTuning.sinkOpenTimeoutMs
        while !ready() {
            if let failure { throw Failure(message: "\(what): \(failure.message)") }
            if monotonicMs() >= deadline { throw Failure(message: "\(what): the sound server did not answer") }
            loop.wait(deadlineMs: deadline)
        }
    }

    // MARK: - Writing

    /// Room the server asked for, in bytes.
    var writable: Int {
        guard let s = stream, failure == nil else { return 0 }
        let n = pa_stream_writable_size(s)
        return n == Int(bitPattern: UInt.max) ? 0 : max(0, n)
    }

    /// Hands `bytes` to the server (libpulse copies them), and asks where it is when due.
    func write(_ bytes: UnsafeRawBufferPointer) {
        guard let s = stream, failure == nil, !bytes.isEmpty else { return }
        if pa_stream_write(s, bytes.baseAddress, bytes.count, nil, 0, PA_SEEK_RELATIVE) < 0 {
            fail(error("sound output failed"))
        }
        askTiming()
    }

    /// Playing (again, after a pause).
    func play() {
        guard corked, let s = stream, failure == nil, lost == nil else { return }
        corked = false
        run(pa_stream_cork(s, 0, nil, nil))
        askTiming(force: true)
    }

    /// Silence now: corks the stream and drops what it holds; the stream stays for the next Play.
    func pause() {
        stopOutput()
        loop.runPending()
    }

    /// Cork + flush, queued (sent by the loop's next round: this may run inside its dispatch).
    private func stopOutput() {
        guard let s = stream, failure == nil else { return }
        if !corked {
            corked = true
            run(pa_stream_cork(s, 1, nil, nil))
        }
        run(pa_stream_flush(s, nil, nil))
    }

    /// Operations are not waited for: their effect is ordered by the server.
    private func run(_ op: OpaquePointer?) { if let op { pa_operation_unref(op) } }

    // MARK: - Latency

    /// Asks the server where its read index and the sink are, at most every `timingEveryMs`, or at
    /// each write while the last report says nothing plays (a prebuffer filling); `force`: now, not
    /// waiting for an answer under way (playback started or ran dry: that one may be stale).
    func askTiming(force: Bool = false) {
        guard let s = stream, failure == nil, !corked else { return }
        let now = monotonicMs()
        if let op = timing {
            guard force || pa_operation_get_state(op) != PA_OPERATION_RUNNING else { return }
            pa_operation_unref(op)
            timing = nil
        }
        let idle = pa_stream_get_timing_info(s).map { $0.pointee.playing == 0 } ?? true
        guard force || idle || timingAskedMs.map({ now - $0 >= StreamTuning.timingEveryMs }) ?? true else { return }
        timingAskedMs = now
        timing = pa_stream_update_timing_info(s, nil, nil)
    }

    /// Audio written but not yet heard, in microseconds: the server's last report (what it held,
    /// the sink's own latency) less what played since, by the clock; what this process wrote
    /// since counts at once (libpulse moves the write index). Nil until the first report, and
    /// after a flush until the next.
    func latencyUs() -> Int? {
        guard let s = stream, failure == nil, let t = pa_stream_get_timing_info(s)?.pointee,
              t.write_index_corrupt == 0, t.read_index_corrupt == 0 else { return nil }
        var spec = pa_stream_get_sample_spec(s).pointee
        let queued = Int(t.write_index - t.read_index)
        var us = (queued > 0 ? Int(pa_bytes_to_usec(UInt64(queued), &spec)) : 0) + Int(clamping: t.sink_usec)
        if t.playing != 0 && !corked {
            var stamp = t.timestamp
            us -= Int(clamping: pa_timeval_age(&stamp))
        }
        return max(0, us)
    }

    // MARK: - Events (from within AudioLoop.wait, through the callbacks in PulseSink+Setup.swift)

    func contextChanged() {
        let state = pa_context_get_state(context)
        if state == PA_CONTEXT_FAILED || state == PA_CONTEXT_TERMINATED {
            fail(Failure(message: "the sound server went away: \(String(cString: pa_strerror(pa_context_errno(context))))"))
        }
    }

    func streamChanged() {
        guard let s = stream, pa_stream_get_state(s) == PA_STREAM_FAILED else { return }
        let errno = pa_context_errno(context)
        if errno == Int32(PA_ERR_KILLED.rawValue) && pa_context_get_state(context) == PA_CONTEXT_READY
            && lostAction() == .pause && !corked {
            outputLost("the sound server ended the stream")
        }
        fail(error("sound output failed"))
    }

    func streamMoved() {
        guard stream != nil else { return }
        let name = device ?? "another output"
        if lostAction() == .follow {
            Log.info("stream: PulseAudio moved the sound output to '\(name)'; playing on there (on_output_lost = follow)")
            return
        }
        // Corked too: paused here, the next Play opens the configured output again; on the way
        // to play (a connection joining on a sink kept from before a pause), this Play pauses.
        outputLost("the sound output went away (PulseAudio moved the stream to '\(name)')")
    }

    func streamSuspended() {
        guard let s = stream, pa_stream_is_suspended(s) == 1, !corked else { return }
        let name = device ?? "the output"
        if lostAction() == .follow {
            Log.info("stream: the sound output '\(name)' was suspended; waiting for it (on_output_lost = follow)")
            return
        }
        outputLost("the sound output '\(name)' was suspended")
    }

    /// Silences at once (nothing more plays wherever the stream went), then tells the output.
    private func outputLost(_ reason: String) {
        guard lost == nil else { return }
        lost = reason
        stopOutput()
        onOutputLost?(reason)
    }

    private func fail(_ e: Failure) {
        guard failure == nil else { return }
        failure = e
    }
}
