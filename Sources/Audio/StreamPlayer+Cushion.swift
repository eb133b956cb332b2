/// The cushion as the bridge sees it.
extension StreamPlayer {
    /// `observer` is called on the decoder thread, and must hand on and return, when the heard
    /// delay falls by more than `StreamTuning.delayFallToldMs` at once: audio was dropped to come
    /// back towards live, and what is held for the delay is due sooner by as much. Nil: no one.
    public func onDelayFall(_ observer: (@Sendable (_ fromMs: Int, _ toMs: Int) -> Void)?) {
        stats.onDelayFall(observer)
    }
}
