import Glibc
import Support

/// The cushion kept on purpose (`CushionPolicy.extraMs`): how much of a stall's backlog the way
/// back towards live leaves in the input, learned from the link. Pure: arrivals, underruns and
/// the clock are inputs; unit-tested. On the decoder thread; kept in `StreamStats` from one
/// connection to the next (the link is the same).
///
/// It grows at once when the link shows it needs more: an arrival gap beyond the sound server's
/// buffer and beyond the link's own rhythm (a stall: the next one of that size is ridden out by a
/// backlog of the gap), or an underrun (what the output lacked, on top of the backlog it had).
/// The backlog a stall that ran the sound out leaves is not dropped, so the next stall plays from
/// it (`OutputCushion.rebufferMs` holds the music until there is enough); a stall ridden out
/// leaves none, and the next track change the server announces starts that much later
/// (`ChangePad`). After `cleanMs` with no such sign it goes back to 0, and the backlog is dropped where
/// the music allows. Never above `capMs`.
struct CushionTarget: Equatable {
    /// The most kept: a stall longer than this is not ridden out vs. how far behind the house
    /// a bad link may leave this computer.
    let capMs: Int
    /// A clean link this long lets the cushion go.
    let cleanMs: Int
    /// An arrival gap up to this is ridden out by the sound server's buffer alone.
    let bufferMs: Int
    /// A gap longer than the link's usual longest by more than this is a stall
    /// (`StreamTuning.cushionStallSlackMs`).
    let slackMs: Int
    private(set) var targetMs = 0
    /// When the link last showed it needs the cushion, monotonic ms.
    private(set) var neededAtMs: Int? = nil
    private var lastArrivalMs: Int? = nil
    /// The longest gap between reads on this link as it is, fading with time (`usualFadeMs`): a
    /// stream whose Ogg pages hold most of a second of quiet audio comes that far apart, clean.
    private(set) var usualGapMs = 0.0
    /// The last gap between reads, ms (for the log).
    private(set) var lastGapMs = 0

    init(capMs: Int = StreamTuning.cushionCapMs, cleanMs: Int = StreamTuning.cushionCleanMs,
         bufferMs: Int = StreamTuning.sinkBufferMs, slackMs: Int = StreamTuning.cushionStallSlackMs) {
        self.capMs = max(0, capMs)
        self.slackMs = max(0, slackMs)
        self.cleanMs = max(0, cleanMs)
        self.bufferMs = max(0, bufferMs)
        usualGapMs = Self.unknownRhythm(bufferMs: self.bufferMs)
    }

    /// Bytes of a decoded frame arrived at `arrivalMs` (the same for every frame of one read):
    /// a gap before them beyond the buffer, and beyond the link's usual longest gap by `slackMs`,
    /// is a stall.
    mutating func arrived(atMs arrivalMs: Int) {
        defer { lastArrivalMs = max(lastArrivalMs ?? arrivalMs, arrivalMs) }
        guard let last = lastArrivalMs else { return }
        let gap = arrivalMs.subtracting(saturating: last)
        guard gap > 0 else { return }
        lastGapMs = gap
        if gap > bufferMs && Double(gap) > usualGapMs + Double(slackMs) { need(gap, atMs: arrivalMs) }
        // Every gap counts in the rhythm: one that changes for good (another stream, the server's
        // encoder) is learned at once, and a stall fades within the reads before the next.
        usualGapMs = max(Double(gap), usualGapMs * exp(-Double(gap) / Self.usualFadeMs))
    }

    /// The usual longest gap falls to 1/e of itself in this long: a stall's own gap is forgotten
    /// before the next stall (a tenth of it in 7 s) vs. a link's own rhythm forgotten between two
    /// of its long gaps (reads come at least every second).
    static let usualFadeMs = 3000.0

    /// The output had nothing to play for `starvedMs` at `nowMs`, with `backlogMs` waiting in
    /// the input before the stall: a cushion of both would have ridden it out.
    mutating func underran(starvedMs: Int, backlogMs: Int, nowMs: Int) {
        guard starvedMs > 0 else { return }
        need(max(0, backlogMs).adding(saturating: starvedMs), atMs: nowMs)
    }

    /// Also the start of a new connection: the gap before its first byte is no stall of the link,
    /// and its rhythm is not known yet.
    mutating func reconnected() {
        lastArrivalMs = nil
        usualGapMs = Self.unknownRhythm(bufferMs: bufferMs)
    }

    /// The usual longest gap before the reads show it: twice the buffer (the first page after a
    /// connect burst can come a page and more later), fading within seconds to what they show;
    /// a longer stall this early is seen by the underrun it causes.
    static func unknownRhythm(bufferMs: Int) -> Double { 2 * Double(bufferMs) }

    /// The target at `nowMs`: 0 once the link has been clean for `cleanMs`.
    mutating func currentMs(nowMs: Int) -> Int {
        if let at = neededAtMs, nowMs.subtracting(saturating: at) >= cleanMs {
            targetMs = 0
            neededAtMs = nil
        }
        return targetMs
    }

    private mutating func need(_ ms: Int, atMs: Int) {
        targetMs = min(capMs, max(targetMs, ms))
        neededAtMs = max(neededAtMs ?? atMs, atMs)
    }
}
