import CPulse
@preconcurrency import Glibc

/// What PulseSink needs around it: the process's properties for the sound server, what a sink
/// name is, and libpulse's callbacks (C functions that find the sink in their user data).
extension PulseSink {
    /// Desktop mixers show the stream as "Groove Audio" with the music role: libpulse adds
    /// PULSE_PROP_* environment variables to every client's property list. setenv is not
    /// thread-safe against getenv: call this at start-up, before any thread.
    public static func prepareEnvironment() {
        setenv("PULSE_PROP_media.role", "music", 0)
        setenv("PULSE_PROP_application.icon_name", "groove-bridge", 0)
        setenv("PULSE_PROP_application.id", "groove-bridge", 0)
    }

    /// A sink named by its name, not by index or a special name such as `@DEFAULT_SINK@`.
    static func isSinkName(_ s: String) -> Bool { !s.hasPrefix("@") && Int(s) == nil }
}

func sinkOf(_ me: UnsafeMutableRawPointer?) -> PulseSink { Unmanaged<PulseSink>.fromOpaque(me!).takeUnretainedValue() }

let paContextState: pa_context_notify_cb_t = { _, me in sinkOf(me).contextChanged() }
let paStreamState: pa_stream_notify_cb_t = { _, me in sinkOf(me).streamChanged() }
let paStreamMoved: pa_stream_notify_cb_t = { _, me in sinkOf(me).streamMoved() }
let paStreamSuspended: pa_stream_notify_cb_t = { _, me in sinkOf(me).streamSuspended() }
