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

    /// libpulse's stream callbacks to this sink (`me`), or none (nil). Playback starting (the
    /// prebuffer full) or running dry changes what the last timing report means (its `playing`):
    /// a new one is asked for at once, or `latencyUs` reads up to `timingEveryMs` high or low.
    func setCallbacks(_ s: OpaquePointer, _ me: UnsafeMutableRawPointer?) {
        let on = me != nil
        pa_stream_set_state_callback(s, on ? paStreamState : nil, me)
        pa_stream_set_moved_callback(s, on ? paStreamMoved : nil, me)
        pa_stream_set_suspended_callback(s, on ? paStreamSuspended : nil, me)
        pa_stream_set_started_callback(s, on ? paStreamTiming : nil, me)
        pa_stream_set_underflow_callback(s, on ? paStreamTiming : nil, me)
    }

    /// A sink named by its name, not by index or a special name such as `@DEFAULT_SINK@`.
    static func isSinkName(_ s: String) -> Bool { !s.hasPrefix("@") && Int(s) == nil }

    /// On another sink than the one named, with `pause`: where `follow` let the sound server move
    /// it (or PipeWire put it for a sink that is gone), which `pause` does not keep playing.
    func isElsewhere(lostAction: OutputLostAction, sinkName: String?) -> Bool {
        lostAction == .pause && sinkName.map(PulseSink.isSinkName) == true && device != sinkName
    }
}

func sinkOf(_ me: UnsafeMutableRawPointer?) -> PulseSink { Unmanaged<PulseSink>.fromOpaque(me!).takeUnretainedValue() }

let paContextState: pa_context_notify_cb_t = { _, me in sinkOf(me).contextChanged() }
let paStreamState: pa_stream_notify_cb_t = { _, me in sinkOf(me).streamChanged() }
let paStreamMoved: pa_stream_notify_cb_t = { _, me in sinkOf(me).streamMoved() }
let paStreamSuspended: pa_stream_notify_cb_t = { _, me in sinkOf(me).streamSuspended() }
let paStreamTiming: pa_stream_notify_cb_t = { _, me in sinkOf(me).askTiming(force: true) }
