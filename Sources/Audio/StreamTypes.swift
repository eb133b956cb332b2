import Net
import Support

public enum StreamStatus: Equatable, Sendable, CustomStringConvertible {
    case stopped
    case connecting
    case buffering
    case playing
    case paused
    case reconnecting(inMs: Int, reason: String)
    /// A problem that waiting will not fix by itself (wrong password, not FLAC, no such mount);
    /// retried slowly all the same, in case the server is fixed. `reason.kind` says whether the
    /// password was refused.
    case failed(reason: FailureReason, retryInMs: Int)
    /// The sound output went away while playing (`OutputLostAction.pause`): not listening, as
    /// after a pause; Play plays again.
    case outputLost(reason: String)

    public var description: String {
        switch self {
        case .stopped: return "stopped"
        case .connecting: return "connecting"
        case .buffering: return "buffering"
        case .playing: return "playing"
        case .paused: return "paused"
        case .reconnecting(let ms, let r): return "reconnecting in \(Double(ms) / 1000) s: \(r)"
        case .failed(let r, let ms): return "failed: \(r) (retrying in \(ms / 1000) s)"
        case .outputLost(let r): return "paused: \(r)"
        }
    }

    /// Why the connection ended and how long until the next one, for the two waiting statuses.
    var retry: (reason: String, delayMs: Int)? {
        switch self {
        case .reconnecting(let ms, let r): return (r, ms)
        case .failed(let r, let ms): return (r.message, ms)
        default: return nil
        }
    }
}

/// What the player reports about itself.
public struct StreamFigures: Sendable, Equatable {
    public var format: AudioFormat? = nil
    /// Decoded audio not yet heard: the join buffer plus the sound server's buffer.
    public var bufferedMs = 0
    /// Audio dropped from Icecast's connect burst to play close to live, at the last join.
    public var skippedAtJoinMs = 0
    /// Digital silence dropped to come back towards live after the link held the stream
    /// (`Playout.Drops`), ms in all, and in how many runs.
    public var droppedForLiveMs = 0
    public var dropsForLive = 0
    /// Silence put before track changes to grow the cushion against stalls after one the link
    /// rode out (`Playout.Pad`), ms in all, and at how many changes.
    public var grownAtChangesMs = 0
    public var growthsAtChanges = 0
    /// How long even the least waiting of the last 2 s of decoded frames waited in the input:
    /// audio held beyond live (what a stall's burst left), which the way back drops in silence.
    public var inputBacklogMs = 0
    /// The cushion kept on purpose against stalls, learned from the link (`Playout.Target`): as
    /// much of the backlog is not dropped.
    public var cushionTargetMs = 0
    public var bytesReceived = 0
    public var samplesDecoded = 0
    public var reconnects = 0
    /// New connections taken over at the sample that played (a changed URL, another route).
    public var seamlessSwitches = 0
    /// When the first audio of the last of those is heard (monotonic ms; nil: unknown).
    public var lastSwitchHeardAtMs: Int? = nil
    public var lostSync = 0
    public var lastError: String? = nil
    /// How far what is heard lags the stream's live edge as received: the sound server's buffer,
    /// decoded audio not yet written to it, and the received bytes not yet decoded. 0 when not
    /// playing. Updated with every write.
    public var localDelayMs = 0
    /// When `localDelayMs` and `bufferedMs` were measured, monotonic ms (0: never).
    public var delayMeasuredAtMs = 0
    public init() {}

    /// How long the sound output has had nothing to play at `nowMs`: the time since the last
    /// write beyond what the sound server then held, once that passes `StreamTuning.starvedAfterMs`
    /// (until the next Ogg page the last write's report undercounts what still plays). 0 while
    /// audio flows.
    public func starvedMs(atMs nowMs: Int) -> Int {
        guard localDelayMs > 0, delayMeasuredAtMs > 0 else { return 0 }
        let dry = max(0, nowMs.subtracting(saturating: delayMeasuredAtMs).subtracting(saturating: bufferedMs))
        return dry > StreamTuning.starvedAfterMs ? dry : 0
    }

    /// The delay at `nowMs`: the last measure, plus the time the output has had nothing to play
    /// since (a stall: what is heard stands still while the server's live edge moves on, so a
    /// change still held is not shown before the audio it follows, however late that comes).
    public func localDelayMs(atMs nowMs: Int) -> Int {
        localDelayMs.adding(saturating: starvedMs(atMs: nowMs))
    }

    /// A measure of the heard delay at `atMs`; returns the fall it makes when it is more than
    /// `StreamTuning.delayFallToldMs` (a drop towards live: whoever times changes by the delay
    /// looks again at once), nil otherwise.
    mutating func measured(bufferedMs: Int, delayMs: Int, atMs: Int) -> (fromMs: Int, toMs: Int)? {
        let before = localDelayMs
        self.bufferedMs = bufferedMs
        localDelayMs = delayMs
        delayMeasuredAtMs = atMs
        guard delayMs > 0, before.subtracting(saturating: delayMs) > StreamTuning.delayFallToldMs else { return nil }
        return (before, delayMs)
    }

    /// Nothing plays any more: nothing is buffered and nothing is late.
    mutating func outputStopped(atMs: Int) {
        _ = measured(bufferedMs: 0, delayMs: 0, atMs: atMs)
        inputBacklogMs = 0
    }

    /// A connection ends or starts: its delay is measured afresh (the last one's, aged by the
    /// outage, would read as a stall).
    mutating func delayUnmeasured() {
        localDelayMs = 0
        delayMeasuredAtMs = 0
    }
}

/// What the player tells, in order, on one channel (`StreamPlayerDelegate`).
public enum StreamEvent: Equatable, Sendable {
    /// The status changed; `sequence` strictly increases (a consumer that hands events on across
    /// threads can drop one older than what it has).
    case status(StreamStatus, sequence: Int)
    /// Where a track change looked for (`StreamPlayer.findBoundary`) was heard in the music.
    case boundaryHeard(BoundaryHeard)
    /// The heard delay fell by more than `StreamTuning.delayFallToldMs` at once: audio was dropped
    /// to come back towards live, and what is held for the delay is due sooner by as much.
    case delayFell(fromMs: Int, toMs: Int)
    /// The new track of the change whose on-time moment is `onTimeMs`
    /// (`BoundaryRequest.onTimeMs`) is heard `laterMs` after it: the audio around it was muted at
    /// a grown cushion, or its first moments went with a cut before it.
    case changeHeardLater(onTimeMs: Int, laterMs: Int)
}

public protocol StreamPlayerDelegate: AnyObject, Sendable {
    /// Called on whichever thread made it (a control caller, "stream-http", "decoder"); statuses
    /// while the player holds the lock that orders them. Must not block and must not call back
    /// into the player: hand the work on and return.
    func streamPlayer(_ event: StreamEvent)
}

/// What the player does when the sound output it plays on goes away while it plays: a USB or
/// Bluetooth headset unplugged (PulseAudio moves the stream to another output), the output
/// suspended, or the stream ended by the server.
public enum OutputLostAction: String, Sendable, CaseIterable {
    /// Stop playing here and say why, as the phone apps do when headphones are unplugged.
    case pause
    /// Keep playing wherever PulseAudio moved the stream.
    case follow
}

public struct StreamConfig: Sendable, Equatable {
    public var url: String
    public var user: String?
    public var password: String?
    /// PulseAudio sink name; nil: PULSE_SINK or the server's default.
    public var sink: String?
    /// PulseAudio server; nil: PULSE_SERVER or the session's.
    public var pulseServer: String? = nil
    public var ringBytes = StreamTuning.ringBytes
    /// Newest audio of Icecast's connect burst kept when joining (StreamTuning.joinKeepMs).
    public var joinBufferMs = StreamTuning.joinKeepMs
    public var stallSeconds = StreamTuning.stallSeconds
    /// Wrong password, not FLAC, untrusted certificate: retried this slowly.
    public var slowRetryMs = StreamTuning.slowRetryMs
    public var onOutputLost = OutputLostAction.pause
    /// After a pause here, the connection is kept and decoded, unheard, this long (0: closed at
    /// once), so that a Play within it is heard at once from the live edge.
    public var keepWarmSeconds = StreamConfig.defaultKeepWarmSeconds
    public static let defaultKeepWarmSeconds = StreamTuning.keepWarmSeconds

    /// How late a connection's audio is heard before its first measure: the join's kept audio
    /// written at once, on top of the sound server's buffer (a little more than the measures
    /// on the rig: a title a little late is better than one ahead of the music).
    public var expectedDelayMs: Int { joinBufferMs.adding(saturating: StreamTuning.sinkBufferMs) }

    public init(url: String, user: String? = nil, password: String? = nil, sink: String? = nil) {
        self.url = url
        self.user = user
        self.password = password
        self.sink = sink
    }
}
