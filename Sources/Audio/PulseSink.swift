import CPulse
@preconcurrency import Glibc

public struct SinkError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public var description: String { message }
}

/// A PulseAudio (or PipeWire-pulse) playback stream through the simple API. The only user of
/// libpulse. Not thread-safe: the decoder thread owns it. Frees the stream in `deinit`.
public final class PulseSink {
    let format: AudioFormat
    /// What the decoder writes at a time: one request's worth.
    let pieceBytes: Int
    private let simple: OpaquePointer

    /// Desktop mixers show the stream as "Groove Audio" with the music role. pa_simple takes no
    /// property list, but libpulse adds PULSE_PROP_* environment variables to every client's.
    /// setenv is not thread-safe against getenv: call this at start-up, before any thread.
    public static func prepareEnvironment() {
        setenv("PULSE_PROP_media.role", "music", 0)
        setenv("PULSE_PROP_application.icon_name", "groove-bridge", 0)
        setenv("PULSE_PROP_application.id", "groove-bridge", 0)
    }

    /// `sink`: a sink name (nil: PULSE_SINK or the default). `bufferMs`: the server-side buffer;
    /// `requestMs`: the least free space the server waits for before it asks for more (the
    /// decoder writes pieces of that size). pa_simple asks for ADJUST_LATENCY, so PulseAudio runs
    /// the sink at (bufferMs − 2 × requestMs) / 2 = 200 ms when no other client asks for less.
    /// Left to the server, requests come every 20 ms: 600/100 costs a tenth less than 400/default,
    /// alone on the sink and beside a low-latency player; 400/100 costs more, the sink then running
    /// at 100 ms (BENCHMARKS.md). A pause still silences within one piece, because the decoder
    /// flushes the buffer.
    init(format: AudioFormat, server: String?, sink: String?, bufferMs: Int = StreamTuning.sinkBufferMs,
         requestMs: Int = StreamTuning.pieceMs) throws(SinkError) {
        self.format = format
        pieceBytes = format.sinkBytes(milliseconds: requestMs)
        var spec = pa_sample_spec()
        spec.format = format.sinkBytesPerSample == 2 ? PA_SAMPLE_S16LE : PA_SAMPLE_S32LE
        spec.rate = UInt32(format.sampleRate)
        spec.channels = UInt8(clamping: format.channels)
        var attr = pa_buffer_attr()
        attr.maxlength = UInt32.max
        attr.tlength = UInt32(format.sinkBytes(milliseconds: bufferMs))
        // The server's default: playback starts once buffer − request (500 ms) is written. The
        // join at the live edge writes its 500 ms at once, so the first sound is not held back.
        attr.prebuf = UInt32.max
        attr.minreq = UInt32(pieceBytes)
        attr.fragsize = UInt32.max
        var err: Int32 = 0
        guard let s = pa_simple_new(server, "Groove Audio", PA_STREAM_PLAYBACK, sink, "Groove Audio stream",
                                    &spec, nil, &attr, &err) else {
            throw SinkError(message: "cannot open the sound output\(sink.map { " '\($0)'" } ?? ""): \(String(cString: pa_strerror(err)))")
        }
        simple = s
    }

    deinit { pa_simple_free(simple) }

    func write(_ bytes: UnsafeRawBufferPointer) throws(SinkError) {
        var err: Int32 = 0
        if pa_simple_write(simple, bytes.baseAddress, bytes.count, &err) < 0 {
            throw SinkError(message: "sound output failed: \(String(cString: pa_strerror(err)))")
        }
    }

    /// Drops what is buffered, so output stops now.
    func flush() {
        var err: Int32 = 0
        _ = pa_simple_flush(simple, &err)
    }

    /// Audio written but not yet heard, in microseconds.
    func latencyUs() -> Int {
        var err: Int32 = 0
        let l = pa_simple_get_latency(simple, &err)
        return l == UInt64.max ? 0 : Int(clamping: l)
    }
}
