/// The cushion as the bridge sees it.
extension StreamPlayer {
    /// `observer` is called on the decoder thread, and must hand on and return, when the heard
    /// delay falls by more than `StreamTuning.delayFallToldMs` at once: audio was dropped to come
    /// back towards live, and what is held for the delay is due sooner by as much. Nil: no one.
    public func onDelayFall(_ observer: (@Sendable (_ fromMs: Int, _ toMs: Int) -> Void)?) {
        stats.onDelayFall(observer)
    }

    /// `observer` is called on the decoder thread, and must hand on and return, when the
    /// cushion grows between two tracks (`ChangePad`): the new track of the change whose
    /// on-time moment is `onTimeMs` (`BoundaryRequest.onTimeMs`) is heard `laterMs` after it, as
    /// the audio around it is muted. Nil: no one.
    public func onChangeHeardLater(_ observer: (@Sendable (_ onTimeMs: Int, _ laterMs: Int) -> Void)?) {
        stats.onChangeHeardLater(observer)
    }
}
