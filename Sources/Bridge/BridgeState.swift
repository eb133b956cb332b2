import Audio
import DBus
import MPRIS
import Mopidy
import Support

/// The bridge's timing choices, each with what it trades.
enum BridgeTuning {
    /// A change of the house's timeline that starts within this long of Next/Previous/OpenUri
    /// pressed through the bridge, or of Play resuming the house, is published at once (the key
    /// feels instant) instead of when it is heard. Longer catches slower servers; shorter lets a
    /// change made elsewhere right after be held properly.
    static let userCommandWindowMs = 3000
    /// Commands here whose starts are still awaited, at most (a key held down: the newest
    /// presses are the ones that count).
    static let maxUserStarts = 8
    /// While changes are held by the estimate of the stream's delay (not measured yet), the
    /// measure is looked for this often, to time them again by it.
    static let estimateCheckMs = 100
    /// While the sound output starves (a stall), held changes wait as if it lasts this much
    /// longer, and are looked at again then: a change may come this much after the audio it
    /// follows resumes vs. how often a stall wakes the bridge.
    static let starvedCheckMs = 100
    /// A held change due within this long after the sound output ran dry is not held through the
    /// stall: its audio may be the last a server sent before it stopped sending (one that halts
    /// its stream in a pause; Ogg holds back up to a page, ~0.42 s) vs. how much of the music
    /// before a change a stall may bring late, after it is shown.
    static let starvedGraceMs = 500
    /// After a pause of the house, its resume is let through from this long before where the
    /// server's delay places it in the stream: a server's delay this much longer than learned
    /// cuts nothing of the resumed music vs. the end of a pause this short may still be silenced
    /// music.
    static let houseSilenceLeadMs = 250
    /// A start the stream tells is heard later (`heardLater`) is held at most this much more
    /// (the stream's window muted after a change is 150 ms).
    static let heardLaterCapMs = 1000
    /// A failed full fetch of Mopidy's state is tried again this soon while its events flow.
    static let resyncRetryMs = 2000
    /// A position change larger than this against the extrapolated one is a jump that gets a
    /// `Seeked`: larger than the drift of a resync or of a stream rejoin within a connection,
    /// smaller than any seek a user makes on purpose.
    static let seekedThresholdUs: Int64 = 1_000_000
    /// No change is held longer than this, whatever the measures say: a stream seconds behind is
    /// possible after stalls; a minute is a fault of the measure, and holding that long would
    /// look like a hang.
    static let maxHeardDelayMs = 60_000
    /// Commands sent to Mopidy and not yet answered; more are dropped with a log line. A user
    /// presses keys a few times a second; a hung server answers nothing for 5 s per call.
    static let maxCommandsInFlight = 16
    /// TrackList's Tracks are at most this many (the spec: a short list around the current track,
    /// not a browser of a long queue). Mopidy sends them in one reply of about 1 KB a track.
    static let trackListLength = 100
    /// Mopidy's changes to its tracklist come in bursts (clear, then add: one event each): they
    /// are fetched this long after the first, once, so a replaced list is one TrackListReplaced.
    static let trackListSettleMs = 50
    /// Covers kept for TrackList's tracks (the current one has its own): a little more than the
    /// list, so a list that moves on keeps those it had.
    static let trackListCovers = 128
    /// Events that arrive while Mopidy's state is fetched wait, at most this many, to be applied
    /// on top of it; past that it is fetched again instead (a burst from the server must not
    /// grow memory, and so much change would make the fetch stale anyway).
    static let maxDeferredEvents = 256
}

/// Everything the bridge knows and has published, as one value. Only `reduce` changes it.
public struct BridgeState: Sendable {
    /// The house: what Mopidy says of itself.
    public internal(set) var server = ServerState()
    /// This computer: its stream, its volume, Stop pressed here, sleep, what was last heard.
    public internal(set) var local = LocalState()
    public internal(set) var config: Config
    /// What the stream player was last told; nil when no stream is configured.
    public internal(set) var streamConfig: StreamConfig?
    /// The newest stream status taken; an older one arriving late is dropped.
    var streamSequence = Int.min
    /// Mopidy's timeline events held until they are heard here, in order of due time.
    var held = FIFO<Held>()
    var lastDueMs = 0
    /// When Next/Previous/OpenUri, or Play resuming the house, last went out through the bridge,
    /// and how many track starts those commands still have to cause (one each: a second start
    /// in the same window was asked for elsewhere).
    var userAskedAtMs: Int? = nil
    var userAskedStarts = 0
    /// When Stop last went to the house through the bridge (until a Play here).
    var stopAskedAtMs: Int? = nil
    /// What the stream was last told of the house's silence (`followHouseSilence`).
    var houseSilence = HouseSilence.none
    /// Held changes wait by the estimate of the stream's delay: when to look for its measure.
    var estimateCheckAtMs: Int? = nil
    /// A full fetch is under way; events wait in `deferred` and are applied on top of it.
    var syncing = false
    var deferred: [MopidyEvent] = []
    var resyncGeneration = 0
    /// More arrived during the fetch than is kept: fetch again when it is in.
    var resyncAgain = false
    var resyncAtMs: Int? = nil
    /// Commands not sent to Mopidy since the last one that was (for the log).
    var commandsRefused = 0
    /// When the tracklist is fetched, once its changes settled.
    var tracklistAtMs: Int? = nil
    /// Refreshes under way, and those asked for again meanwhile (a burst collapses to one more).
    var refreshing: Set<Refresh> = [], refreshAgain: Set<Refresh> = []
    /// This computer has heard the stream since it last stopped listening.
    var listening = false
    /// How far the position's anchor trails the house's (the heard delay it was taken with).
    var alignedDelayMs = 0
    /// While a held event is applied: how long it was held, and how far into the track it starts
    /// its music is heard from (`Held.laterMs`).
    var applyingHeldMs = 0, applyingLaterMs = 0
    /// A `seeked` event was applied during this input: signal it even for a small jump.
    var seekedEvent = false
    /// Tracks whose cover for TrackList was asked for (cleared with the covers).
    var coversAsked: Set<String> = []
    var commandsInFlight = 0
    var latestInFlight: Set<MopidyCall.Latest> = []
    var latestWaiting: [MopidyCall.Latest: MopidyCall] = [:]
    public internal(set) var published: PlayerState
    public internal(set) var eventsConnected = false
    public internal(set) var lastError: String? = nil
    public internal(set) var eventReconnects = 0
    public internal(set) var link = LinkState()
    /// What refuses the password in this episode (see Reducer+SignIn), and what the user is told.
    var refusedBy: Set<PasswordRefuser> = []
    public internal(set) var signInNeeded: String? = nil
    /// The server's delay as learned from the music (Reducer+Learn).
    public internal(set) var learner: ServerDelayLearner

    enum Refresh: Hashable { case neighbours, options, tracklist, playlists, mixer }

    struct Held: Sendable {
        var dueMs: Int
        var heldMs: Int
        var event: MopidyEvent
        /// A track start's on-time moment in the stream, as the stream was told it
        /// (`announceChange`; nil: it was not).
        var onTimeMs: Int? = nil
        /// Heard this much after the delay says (`heardLater`).
        var laterMs = 0
    }

    public init(config: Config, canRaise: Bool) {
        self.config = config
        learner = ServerDelayLearner(startMs: config.serverDelayMs)
        streamConfig = config.effectiveStreamURL.map { BridgeState.streamConfig(config, url: $0) }
        local.stream = streamConfig == nil ? nil : .stopped
        local.volumeMode = config.volume
        local.canRaise = canRaise
        published = playerState(server, local)
    }

    public static func streamConfig(_ c: Config, url: String) -> StreamConfig {
        var s = StreamConfig(url: url, user: c.user, password: c.password, sink: c.sink)
        s.onOutputLost = c.onOutputLost
        s.keepWarmSeconds = c.keepWarmSeconds
        return s
    }

    var hasStream: Bool { streamConfig != nil }

    /// A copy for other threads to read (status): without the queues of held and deferred events,
    /// so that keeping the copy does not make the next append to them copy them whole.
    public var view: BridgeState {
        var v = self
        v.held = FIFO()
        v.deferred = []
        return v
    }

    /// When the runner should hand in `.due`: the next held event, a resync to retry, the
    /// tracklist to fetch once its changes settled, the other route to probe or to take.
    public var nextDeadlineMs: Int? {
        [held.first?.dueMs, estimateCheckAtMs, resyncAtMs, tracklistAtMs, link.due.atMs].compactMap { $0 }.min()
    }

    /// How long after the server a change is heard here: the stream's delay plus the server's
    /// own (`serverDelayMs`: learned, or `server_delay_ms`), while this computer plays or is on
    /// its way to (Play pressed, the stream connecting); 0 otherwise (nothing to align to).
    public func heardDelayMs(_ m: Moment) -> Int { heardDelay(m).ms }

    /// The heard delay, and whether it rests on the stream's measure. Before a connection's
    /// first measure, and while it connects, the stream's part is the best estimate
    /// (`StreamConfig.expectedDelayMs`), so that a change in the first seconds after Play is not
    /// shown before it is heard; what is held by it is timed again by the measure (`retimeHeld`).
    func heardDelay(_ m: Moment) -> (ms: Int, measured: Bool) {
        guard hasStream, config.heardSync, let expected = streamConfig?.expectedDelayMs else { return (0, true) }
        let stream: Int, measured: Bool
        switch local.stream {
        case .playing? where m.streamDelayMs > 0: (stream, measured) = (m.streamDelayMs, true)
        case .playing?, .connecting?, .buffering?: (stream, measured) = (expected, false)
        default: return (0, true)
        }
        let bound = BridgeTuning.maxHeardDelayMs
        return (min(bound, stream.adding(saturating: max(0, serverDelayMs))), measured)
    }
}

extension MopidyEvent {
    /// Events that move along the server's timeline: published when they are heard here.
    var isTimeline: Bool {
        switch self {
        case .trackPlaybackStarted, .trackPlaybackPaused, .trackPlaybackResumed, .trackPlaybackEnded,
             .playbackStateChanged, .seeked, .streamTitleChanged:
            return true
        case .tracklistChanged, .optionsChanged, .volumeChanged, .muteChanged, .playlistsLoaded,
             .playlistChanged, .playlistDeleted, .other:
            return false
        }
    }

    /// The house's state this event says it is in, if it says one.
    var houseState: PlaybackState? {
        switch self {
        case .playbackStateChanged(_, let new): return new
        case .trackPlaybackPaused: return .paused
        case .trackPlaybackResumed, .trackPlaybackStarted: return .playing
        default: return nil
        }
    }

    /// The event that completes a command's answer: Mopidy says the new state first, then this.
    var startsOrResumesTrack: Bool {
        switch self {
        case .trackPlaybackStarted, .trackPlaybackResumed: return true
        default: return false
        }
    }

    /// What a command here (Play, Next, Previous, a track chosen) can make the house do: start,
    /// resume or change track. A pause or a stop in the window after such a command is not its
    /// answer but someone else's doing, and is held like any change from elsewhere.
    var startsMusic: Bool {
        if case .playbackStateChanged(_, .playing) = self { return true }
        return startsOrResumesTrack
    }
}

func describe(_ t: Track?) -> String {
    guard let t else { return "nothing" }
    return t.artists.isEmpty ? (t.name ?? t.uri) : "\(t.artists.joined(separator: ", ")) – \(t.name ?? t.uri)"
}

extension MopidyEvent {
    /// The event's kind, for log lines (a title can be long and is the server's text).
    var name: String {
        switch self {
        case .trackPlaybackStarted(let tl): return "track_playback_started(\(tl.tlid))"
        case .trackPlaybackPaused: return "track_playback_paused"
        case .trackPlaybackResumed: return "track_playback_resumed"
        case .trackPlaybackEnded: return "track_playback_ended"
        case .playbackStateChanged(_, let new): return "playback_state_changed(\(new.rawValue))"
        case .seeked(let ms): return "seeked(\(ms) ms)"
        case .streamTitleChanged: return "stream_title_changed"
        default: return "\(self)"
        }
    }
}
