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

/// The sound server refused or went away.
public struct SinkError: Error, CustomStringConvertible, Sendable {
    public let message: String
    /// The output asked for is not there (a headset unplugged while the stream was on its way).
    public var missing = false
    public var description: String { message }
}

/// What the player reports about itself.
public struct StreamFigures: Sendable, Equatable {
    public var format: AudioFormat? = nil
    /// Decoded audio not yet heard: the join buffer plus the sound server's buffer.
    public var bufferedMs = 0
    /// Audio dropped from Icecast's connect burst to play close to live, at the last join.
    public var skippedAtJoinMs = 0
    /// Digital silence dropped to come back towards live after the link held the stream
    /// (`CushionPolicy`), ms in all, and in how many runs.
    public var droppedForLiveMs = 0
    public var dropsForLive = 0
    /// Silence put before track changes to grow the cushion against stalls after one the link
    /// rode out (`ChangePad`), ms in all, and at how many changes.
    public var grownAtChangesMs = 0
    public var growthsAtChanges = 0
    /// How long even the least waiting of the last 2 s of decoded frames waited in the input:
    /// audio held beyond live (what a stall's burst left), which the way back drops in silence.
    public var inputBacklogMs = 0
    /// The cushion kept on purpose against stalls, learned from the link (`CushionTarget`): as
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
}

public protocol StreamPlayerDelegate: AnyObject, Sendable {
    /// Called on whichever thread made the change (a control caller, "stream-http", "decoder")
    /// while the player holds the lock that orders the changes, so calls come in the order the
    /// changes happened, with `sequence` strictly increasing (a consumer that hands them on
    /// across threads can drop one older than what it has). Must not block and must not call
    /// back into the player: hand the work on and return.
    func streamPlayer(statusChanged status: StreamStatus, sequence: Int)
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

/// The stream's audio silenced because the house paused or stopped and that is shown here
/// (`StreamPlayer.silence`): music from before the pause that a stall brings late is not heard
/// under Paused. What the house sends while paused is silence anyway, or nothing.
public enum HouseSilence: Equatable, Sendable {
    case none
    /// Until told otherwise.
    case untilTold
    /// Until the audio that would have arrived at `onTimeMs` had every page come on time
    /// (monotonic ms; `BoundaryRequest` places a change the same way): where the house's
    /// resume is in the stream, shown or not yet.
    case until(onTimeMs: Int)

    /// Whether audio that would have arrived at `onTimeMs` is silenced (nil: not known yet).
    public func silences(onTimeMs: Int?) -> Bool {
        switch self {
        case .none: return false
        case .untilTold: return true
        case .until(let end): return onTimeMs.map { $0 < end } ?? true
        }
    }
}
