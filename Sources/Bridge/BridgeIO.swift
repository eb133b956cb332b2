import Audio
import DBus
import MPRIS
import Mopidy
import Net
import Support

// What goes into the reducer and what comes out of it.

/// When an input is reduced, as the runner saw it: the reducer reads no clock and no other
/// thread, so a test replays any sequence exactly.
public struct Moment: Sendable, Equatable {
    public var nowUs: Int64
    /// How far what this computer plays lags the stream's live edge (StreamPlayer's measure of
    /// the sound server and its own buffers), ms; 0 when it is not playing.
    public var streamDelayMs: Int
    /// How long of that the sound output has had nothing to play (a stall), ms; 0 while audio flows.
    public var streamStarvedMs: Int
    public var nowMs: Int { Int(nowUs / 1000) }

    public init(nowUs: Int64, streamDelayMs: Int = 0, streamStarvedMs: Int = 0) {
        self.nowUs = nowUs
        self.streamDelayMs = streamDelayMs
        self.streamStarvedMs = streamStarvedMs
    }
}

/// Everything that changes the bridge's state, in the order the runner received it.
public enum Input: Sendable {
    /// The bridge is on the bus and follows Mopidy: the stream is set up (and plays, with
    /// `autoplay`).
    case started
    /// Mopidy's event socket is up at `url` (the wsURL of one of the route's layouts): fetch the
    /// whole state (events missed meanwhile are lost), and call the layout that answered.
    case eventsConnected(url: String)
    /// `reason.kind` says whether the handshake was refused (the password).
    case eventsDisconnected(reason: FailureReason)
    case event(MopidyEvent)
    /// The answer to one of the bridge's own Mopidy calls.
    case reply(Reply)
    case streamStatus(StreamStatus, sequence: Int)
    /// The stream's heard delay fell at once (audio dropped to come back towards live): what is
    /// held for it is timed again now (`StreamEvent.delayFell`).
    case streamDelayFell(fromMs: Int, toMs: Int)
    /// The new track of the change whose on-time moment is `onTimeMs` is heard `laterMs` after
    /// it: silence was written before it and the audio around it muted
    /// (`StreamEvent.changeHeardLater`).
    case streamChangeHeardLater(onTimeMs: Int, laterMs: Int)
    /// The user, through MPRIS.
    case command(PlayerCommand)
    case reload(Config)
    /// The cover of a track is on disk (nil: it has none, or it could not be fetched).
    case artReady(trackURI: String, file: String?)
    /// The cover of a track of the tracklist (for TrackList), fetched when a client asked.
    case coverReady(trackURI: String, file: String?)
    /// The deadline the state asked for (`nextDeadlineMs`) has passed.
    case due
    /// logind's PrepareForSleep: true as the machine goes to sleep, false once it is awake again.
    case sleeping(Bool)
    /// NetworkManager's state changed (any change to connected, even connected again).
    case network(NetworkState)
    /// The answer to `.probe`: whether the route's Mopidy and stream answered, and if not why.
    case probed(Route, answered: Bool, detail: String)
    /// Where a track change the server announced was heard in the music (`.findBoundary`).
    case boundaryHeard(BoundaryHeard)
}

/// What the runner asks Mopidy, on its own thread; the answer comes back as `.reply`.
public enum MopidyCall: Equatable, Sendable {
    /// The whole state; `generation` tells its answer from an older fetch's.
    case resync(generation: Int)
    case refreshNeighbours, refreshOptions, refreshTracklist, refreshPlaylists, refreshMixer
    case play, resume, pause, stop, next, previous
    case seek(ms: Int)
    case setVolume(Int)
    case setMute(Bool)
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
        case .resync, .refreshNeighbours, .refreshOptions, .refreshTracklist, .refreshPlaylists, .refreshMixer: return false
        default: return true
        }
    }

    /// Calls where only the newest matters (a volume wheel, a seek bar dragged): while one is
    /// under way, a newer one waits and replaces any other waiting.
    var latestWins: Latest? {
        switch self {
        case .setVolume: return .volume
        case .setMute: return .mute
        case .seek: return .seek
        default: return nil
        }
    }

    enum Latest: Hashable, Sendable { case volume, mute, seek }

    /// Moves Mopidy to another entry of its tracklist.
    var changesTrack: Bool {
        switch self {
        case .next, .previous, .goTo: return true
        default: return false
        }
    }

    /// For log lines.
    var name: String {
        switch self {
        case .resync: return "resync"
        case .refreshNeighbours: return "next/previous"
        case .refreshOptions: return "options"
        case .refreshTracklist: return "tracklist"
        case .refreshPlaylists: return "playlists"
        case .refreshMixer: return "mixer"
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
        case .setMute: return "mute"
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
    case mixer(volume: Int?, muted: Bool)
    /// The tracklist around the current track (see `ServerState.tracklist`).
    case tracklist([TlTrack])
    case playlists([PlaylistInfo])
    /// A playlist replaced the tracklist with these tracks.
    case activated(uri: String, tlids: [Int])
    case done(MopidyCall)
    /// `reason.kind` says whether the password was refused.
    case failed(MopidyCall, reason: FailureReason)
}

/// Mopidy's whole state, fetched after every (re)connect.
public struct Snapshot: Equatable, Sendable {
    /// The fetch it answers (`MopidyCall.resync`).
    public var generation = 0
    public var rpcURL: String
    public var current: TlTrack?
    public var state: PlaybackState
    public var positionMs: Int
    public var volume: Int?
    public var muted = false
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
    /// Close a connection kept warm after a pause (`StreamPlayer.endWarm`).
    case endWarm
    case volume(Double)
    case configure(StreamConfig)
    /// Ends the wait between attempts (`StreamPlayer.retryNow`), or holds retries (no network).
    case retryNow
    case hold(Bool)
    /// A track change is coming at this on-time moment: the cushion may cut before it or grow
    /// at it (`StreamPlayer.changeAnnounced`), learning or not.
    case changeAnnounced(onTimeMs: Int)
    /// Look for a track change in the audio to learn the server's delay (`StreamPlayer.findBoundary`).
    case findBoundary(BoundaryRequest)
    /// Whether the decoder keeps what it needs to find boundaries: while the delay is learned.
    case watchBoundaries(Bool)
    /// The house's pause or stop is shown: what is decoded is silenced (`StreamPlayer.silence`).
    case silence(HouseSilence)
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
    /// Covers for TrackList, one after the other, after the current track's.
    case fetchCovers([Track])
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
    /// The RPC client calls this layout of the route in use: the one whose events answered.
    case useLayout(MopidyEndpoints)
    /// Does this route answer (Mopidy's RPC, and the stream when there is one)? → `.probed`.
    case probe(Route, layouts: [MopidyEndpoints], stream: StreamConfig?)
    /// The password is refused: a desktop notification asks the user to sign in again.
    case askToSignIn(SignInRequest)
}
