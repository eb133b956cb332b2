import Support

/// Opening the sound output for a connection's audio.
extension PulseSink {
    /// A sink for `format` on the output named `sink` (nil: the default). When that output is
    /// missing and `on_output_lost = follow`, the default output instead, as a playing stream is
    /// moved by the sound server.
    static func open(_ format: AudioFormat, server: String?, sink: String?, loop: AudioLoop,
                     lostAction: @escaping () -> OutputLostAction) throws(PulseSink.Failure) -> PulseSink {
        do throws(PulseSink.Failure) {
            return try PulseSink(format: format, server: server, sink: sink, loop: loop, lostAction: lostAction)
        } catch where error.missing && lostAction() == .follow {
            let s = try PulseSink(format: format, server: server, sink: nil, loop: loop, lostAction: lostAction)
            Log.info("stream: \(error.message); playing on the default output (on_output_lost = follow)")
            return s
        }
    }
}
