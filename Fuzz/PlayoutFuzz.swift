// libFuzzer target: the playout (Sources/Audio/Playout*.swift) driven by any sequence of frames,
// measures, announced changes, pauses and joins, with any clock readings, arrivals and lengths.
// Nothing may trap (arithmetic on these values saturates), and what it decides stays within its
// bounds: silence before a frame at most twice the cushion's cap, a muted part never longer than
// the frame, notes told and taken.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    var bytes = UnsafeBufferPointer(start: data, count: size)[...]
    func int(_ width: Int = 4) -> Int {
        var v = 0
        for _ in 0..<width { v = v << 8 | Int(bytes.popFirst() ?? 0) }
        // Now and then a value at the ends of Int.
        return width == 4 && v & 0xFF == 0xFF ? (v & 0x100 == 0 ? Int.max : Int.min) : v - (1 << (8 * width - 1))
    }
    let format = AudioFormat(sampleRate: [44_100, 48_000, 1000, 0, 96_000][Int(bytes.first ?? 0) % 5], channels: 2, bitsPerSample: 16)
    var p = Playout(keepMs: int(2), learned: Playout.Target(capMs: int(2), cleanMs: int(2), bufferMs: int(2)), joining: Instant(ms: int()))
    var now = 0
    while let op = bytes.popFirst() {
        now = now.addingReportingOverflow(int(2)).partialValue
        let at = Instant(ms: now)
        switch op % 8 {
        case 0, 1, 2:
            let samples = int(2) & 0x7FFF
            let house: HouseSilence = [.none, .untilTold, .until(onTimeMs: int())][Int(op / 8) % 3]
            let d = p.decide(samples: samples, format: format, arrival: Instant(ms: now.subtracting(saturating: int(2))),
                             skippedSamples: int(2) & 0xFFF, house: house, at: at, silent: { op & 0x10 != 0 })
            precondition(d.silenceMs >= 0 && d.silenceMs <= 2 * max(0, p.target.capMs), "silence beyond the cap")
            precondition(d.mutedMs >= 0 && d.mutedMs <= max(0, format.milliseconds(frames: samples)), "muted beyond the frame")
        case 3: _ = p.measured(soundServerMs: int(2), heldMs: int(2), at: at)
        case 4: p.announced((0..<Int(op / 8) % 20).map { _ in Instant(ms: int()) })
        case 5: p.paused(at: at)
        case 6: p.resumed(heldMs: int(2), at: at)
        default: _ = p.joinEnds(heldMs: int(2), droppedMs: int(2), idle: op & 0x10 != 0, ended: op & 0x20 != 0, at: at)
        }
        _ = p.takeNotes()
        precondition(p.notes.isEmpty, "notes not taken")
    }
    let frames = (0..<Int(bytes.count % 50)).map { _ in (first: Int64(int()), end: Int64(int())) }
    let start = Playout.joinStart(frames, keepSamples: Int64(int()))
    precondition(start.index >= 0 && start.index <= max(0, frames.count - 1), "the join starts outside the frames")
    return 0
}
