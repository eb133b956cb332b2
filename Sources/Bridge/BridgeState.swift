import Audio
import DBus
import MPRIS
import Mopidy
import Support

/// The bridge's timing choices, each with what it trades.
enum BridgeTuning {
    /// A track change that starts within this long of Next/Previous/OpenUri pressed through the
    /// bridge is published at once (the key feels instant) instead of when it is heard. Longer
    /// catches slower servers; shorter lets a change made elsewhere right after be held properly.
    static let userCommandWindowMs = 3000
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
}

/// When an input is reduced, as the runner saw it: the reducer reads no clock and no other
/// thread, so a test replays any sequence exactly.
public struct Moment: Sendable, Equatable {
    public var nowUs: Int64
    /// How far what this computer plays lags the stream's live edge (StreamPlayer's measure of
    /// the sound server and its own buffers), ms; 0 when it is not playing.
    public var streamDelayMs: Int
    public var nowMs: Int { Int(nowUs / 1000) }

    public init(nowUs: Int64, streamDelayMs: Int = 0) {
        self.nowUs = nowUs
        self.streamDelayMs = streamDelayMs
    }
}

/// Everything that changes the bridge's state, in the order the runner received it.
public enum Input: Sendable {
    /// Mopidy's event socket is up: fetch the whole state (events missed meanwhile are lost).
    case eventsConnected
    case eventsDisconnected(reason: String)
    case event(MopidyEvent)
    /// The answer to one of the bridge's own Mopidy calls.
    case reply(Reply)
    case streamStatus(StreamStatus, sequence: Int)
    /// The user, through MPRIS.
    case command(PlayerCommand)
    case reload(Config)
    /// The cover of a track is on disk (nil: it has none, or it could not be fetched).
    case artReady(trackURI: String, file: String?)
    /// The deadline the state asked for (`nextDeadlineMs`) has passed.
    case due
    /// logind's PrepareForSleep: true as the machine goes to sleep, false once it is awake again.
    case sleeping(Bool)
    /// NetworkManager's state changed (any change to connected, even connected again).
    case network(NetworkState)
    /// The answer to `.probe`: whether the route's Mopidy and stream answered, and if not why.
    case probed(Route, answered: Bool, detail: String)
}

/// What the runner asks Mopidy, on its own thread; the answer comes back as `.reply`.
public enum MopidyCall: Equatable, Sendable {
    case resync, refreshNeighbours, refreshOptions, refreshTracklist, refreshPlaylists
    case play, resume, pause, stop, next, previous
    case seek(ms: Int)
    case setVolume(Int)
    case setLoop(LoopStatus)
    case setRandom(Bool)
    case open(uri: String)
    case addTrack(uri: String, afterTlid: Int?, play: Bool)
    case removeTrack(tlid: Int)
    case goTo(tlid: Int)
    case activatePlaylist(uri: String)

    /// Asked for by a user's command (not by the bridge's own bookkeeping).
    var isCommand: Bool {
        switch self {
        case .resync, .refreshNeighbours, .refreshOptions, .refreshTracklist, .refreshPlaylists: return false
        default: return true
        }
    }

    /// Calls where only the newest matters (a volume wheel, a seek bar dragged): while one is
    /// under way, a newer one waits and replaces any other waiting.
    var latestWins: Latest? {
        switch self {
        case .setVolume: return .volume
        case .seek: return .seek
        default: return nil
        }
    }

    enum Latest: Hashable, Sendable { case volume, seek }

    /// For log lines.
    var name: String {
        switch self {
        case .resync: return "resync"
        case .refreshNeighbours: return "tracklist"
        case .refreshOptions: return "options"
        case .refreshTracklist: return "tracklist"
        case .refreshPlaylists: return "playlists"
        case .addTrack(let uri, _, _): return "add \(uri)"
        case .removeTrack: return "remove"
        case .goTo: return "go to"
        case .activatePlaylist(let uri): return "activate \(uri)"
        case .play, .resume: return "play"
        case .pause: return "pause"
        case .stop: return "stop"
        case .next: return "next"
        case .previous: return "previous"
        case .seek: return "seek"
        case .setVolume: return "volume"
        case .setLoop: return "loop"
        case .setRandom: return "shuffle"
        case .open(let uri): return "open \(uri)"
        }
    }
}

public enum Reply: Sendable {
    case synced(Snapshot)
    case neighbours(next: Int?, previous: Int?)
    case options(repeatOn: Bool, single: Bool, random: Bool)
    /// The tracklist around the current track (see `ServerState.tracklist`).
    case tracklist([TlTrack])
    case playlists([PlaylistInfo])
    /// A playlist replaced the tracklist with these tracks.
    case activated(uri: String, tlids: [Int])
    case done(MopidyCall)
    case failed(MopidyCall, reason: String)
}

/// Mopidy's whole state, fetched after every (re)connect.
public struct Snapshot: Equatable, Sendable {
    public var rpcURL: String
    public var current: TlTrack?
    public var state: PlaybackState
    public var positionMs: Int
    public var volume: Int?
    public var repeatOn = false, single = false, random = false
    public var nextTlid: Int? = nil, previousTlid: Int? = nil
    public var uriSchemes: [String] = []

    public init(rpcURL: String, current: TlTrack?, state: PlaybackState, positionMs: Int, volume: Int?) {
        self.rpcURL = rpcURL; self.current = current; self.state = state
        self.positionMs = positionMs; self.volume = volume
    }
}

public enum StreamCommand: Equatable, Sendable {
    case play, pause, stop
    case volume(Double)
    case configure(StreamConfig)
    /// Ends the wait between attempts (`StreamPlayer.retryNow`), or holds retries (no network).
    case retryNow
    case hold(Bool)
}

/// What the events socket is told (`MopidyEventStream`).
public enum EventsCommand: Equatable, Sendable {
    case retryNow
    case hold(Bool)
    /// Replace the connection at once (after a wake).
    case reconnect
}

/// Work the reducer asks for; the runner performs it, in order.
public enum Effect: Equatable, Sendable {
    /// The MPRIS object's new state (the service signals what changed).
    case publish(PlayerState)
    case seeked(positionUs: Int64)
    case call(MopidyCall)
    case fetchArt(Track)
    case notify(Track, artFile: String?)
    case stream(StreamCommand)
    /// Raise: the server's web interface in the browser.
    case openWebInterface
    case quit
    case log(Log.Level, String)
    /// A signal of TrackList or Playlists.
    case signal(interface: String, member: String, args: [DBusValue])
    case events(EventsCommand)
    /// Use these layouts: the events socket reconnects to them at once, the RPC client follows.
    case route(Route, layouts: [MopidyEndpoints])
    /// Does this route answer (Mopidy's RPC, and the stream when there is one)? → `.probed`.
    case probe(Route, layouts: [MopidyEndpoints], stream: StreamConfig?)
}

/// Everything the bridge knows and has published, as one value. Only `reduce` changes it.
public struct BridgeState: Sendable {
    public internal(set) var server = ServerState()
    public internal(set) var config: Config
    /// What the stream player was last told; nil when no stream is configured.
    public internal(set) var streamConfig: StreamConfig?
    /// The newest stream status taken; an older one arriving late is dropped.
    var streamSequence = Int.min
    /// Mopidy's timeline events held until they are heard here, in order of due time.
    var held = FIFO<(dueMs: Int, heldMs: Int, event: MopidyEvent)>()
    var lastDueMs = 0
    /// When Next/Previous/OpenUri last went out through the bridge.
    var userChangedTrackAtMs: Int? = nil
    /// A full fetch is under way; events wait in `deferred` and are applied on top of it.
    var syncing = false
    var deferred: [MopidyEvent] = []
    var resyncAtMs: Int? = nil
    /// When the tracklist is fetched, once its changes settled.
    var tracklistAtMs: Int? = nil
    /// Refreshes under way, and those asked for again meanwhile (a burst collapses to one more).
    var refreshing: Set<Refresh> = [], refreshAgain: Set<Refresh> = []
    /// This computer has heard the stream since it last stopped listening.
    var listening = false
    /// How far the position's anchor trails the house's (the heard delay it was taken with).
    var alignedDelayMs = 0
    /// While a held event is applied: how long it was held.
    var applyingHeldMs = 0
    /// A `seeked` event was applied during this input: signal it even for a small jump.
    var seekedEvent = false
    var commandsInFlight = 0
    var latestInFlight: Set<MopidyCall.Latest> = []
    var latestWaiting: [MopidyCall.Latest: MopidyCall] = [:]
    public internal(set) var published: PlayerState
    public internal(set) var eventsConnected = false
    public internal(set) var lastError: String? = nil
    public internal(set) var eventReconnects = 0
    public internal(set) var link = LinkState()

    enum Refresh: Hashable { case neighbours, options, tracklist, playlists }

    public init(config: Config, canRaise: Bool) {
        self.config = config
        streamConfig = config.effectiveStreamURL.map { BridgeState.streamConfig(config, url: $0) }
        server.localStream = streamConfig == nil ? nil : .stopped
        server.volumeMode = config.volume
        server.canRaise = canRaise
        published = server.playerState()
    }

    public static func streamConfig(_ c: Config, url: String) -> StreamConfig {
        StreamConfig(url: url, user: c.user, password: c.password, sink: c.sink)
    }

    var hasStream: Bool { streamConfig != nil }

    /// When the runner should hand in `.due`: the next held event, a resync to retry, the
    /// tracklist to fetch, the other route to probe or to take.
    public var nextDeadlineMs: Int? {
        [held.first?.dueMs, resyncAtMs, tracklistAtMs, link.probeAtMs, link.switchAtMs].compactMap { $0 }.min()
    }

    /// How long after the server a change is heard here: the stream's delay plus the server's
    /// own (`server_delay_ms`), while this computer plays; 0 otherwise (nothing to align to).
    public func heardDelayMs(_ m: Moment) -> Int {
        guard hasStream, config.heardSync, server.localStream == .playing else { return 0 }
        let bound = BridgeTuning.maxHeardDelayMs
        return min(bound, max(0, m.streamDelayMs).adding(saturating: max(0, config.serverDelayMs)))
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
}

func describe(_ t: Track?) -> String {
    guard let t else { return "nothing" }
    return t.artists.isEmpty ? (t.name ?? t.uri) : "\(t.artists.joined(separator: ", ")) – \(t.name ?? t.uri)"
}
