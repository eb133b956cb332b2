import Audio
import DBus
import MPRIS
import Mopidy
import Net
import Support
import Synchronization

/// MPRIS ↔ Mopidy ↔ this computer's stream: the runner around `BridgeState.reduce`.
///
/// Threads: "bridge" reduces every input in order and performs the effects that return at once
/// (publishing, stream control); "mopidy-rpc" makes the calls to Mopidy, one at a time, and
/// hands each answer back as an input; "cover-art" downloads covers and sends notifications.
/// So the D-Bus thread never waits on the network, and neither does a pause.
public final class Bridge: MPRISController, MopidyEventStreamDelegate, StreamPlayerDelegate, @unchecked Sendable {
    public let client: MopidyClient
    /// Where Mopidy may answer on the route in use, in order of preference: one layout when the
    /// URLs are configured, Groove Audio's then plain Mopidy's from a host alone. The event
    /// stream tries them on every (re)connect and the RPC client follows the one that answered
    /// (`.useLayout`). The reducer keeps them (`LinkState.layouts`) and decides on "bridge".
    public var layouts: [MopidyEndpoints] { latest.withLock { $0.link.layouts ?? [] } }
    /// This computer's stream; nil when no stream URL is known.
    public let stream: StreamPlayer?

    private var loop: InputLoop<Input>!
    /// Touched only on the loop's thread once `start` ran.
    private var state: BridgeState
    /// A copy of the state after every input, for `status` (read on the D-Bus thread).
    private let latest: Mutex<BridgeState>
    private let rpc = SerialWorker(name: "mopidy-rpc")
    private let artWorker = SerialWorker(name: "cover-art")
    /// Asks whether the route not in use answers (`RouteProbe`), one probe at a time. Started
    /// with the first probe: without a remote route there is none. Touched only on "bridge".
    private lazy var probeWorker = SerialWorker(name: "route-probe")
    /// What the system bus watcher found, for `status`.
    let systemBusReport = Mutex("not looked at yet")
    private let art: ArtCache
    /// The newest cover wanted; older requests still queued are skipped.
    private let artWanted = Mutex<Track?>(nil)
    /// Used only on the cover-art thread.
    private let notifier = Notifier(busAddress: nil)
    private var service: MPRISService?
    private var events: MopidyEventStream?
    private let onQuit: @Sendable () -> Void

    public init(config: Config, layouts: [MopidyEndpoints], artDirectory: String,
                onQuit: @escaping @Sendable () -> Void) {
        precondition(!layouts.isEmpty, "Bridge needs at least one Mopidy layout")
        client = MopidyClient(endpoints: layouts[0])
        art = ArtCache(directory: artDirectory)
        self.onQuit = onQuit
        state = BridgeState(config: config, canRaise: !webOpeners.isEmpty)
        state.link.layouts = layouts
        latest = Mutex(state)
        stream = state.streamConfig.map { StreamPlayer(config: $0, delegate: nil) }
        loop = InputLoop(name: "bridge", handle: { [weak self] input in self?.run(input) },
                         due: { [weak self] in self?.run(.due) })
    }

    public var config: Config { latest.withLock { $0.config } }

    /// Publishes on `connection` and starts following Mopidy (and playing, with autoplay).
    /// Returns the bus name taken, or nil when another bridge owns the name and
    /// `allowInstance` is false.
    public func start(connection: DBusConnection, allowInstance: Bool) throws(DBusFailure) -> String? {
        let service = MPRISService(connection: connection, controller: self, initial: state.published,
                                   status: { [weak self] in self?.statusJSON() ?? "{}" })
        guard let name = try service.publish(allowInstance: allowInstance) else { return nil }
        self.service = service
        stream?.setDelegate(self)
        let events = MopidyEventStream(urls: layouts.map(\.wsURL), delegate: self)
        self.events = events
        events.start()
        loop.submit(.started, whenFull: .always)
        return name
    }

    public func shutdown() {
        events?.stop()
        stream?.stop()
    }

    /// A new configuration (SIGHUP).
    public func reload(_ new: Config) {
        loop.submit(.reload(new), whenFull: .always)
    }

    // MARK: - The runner (on "bridge")

    private func run(_ input: Input) {
        let effects = state.reduce(input, at: now)
        latest.withLock { $0 = state.view }
        loop.wake(atMs: state.nextDeadlineMs)
        for e in effects { perform(e) }
    }

    private func perform(_ effect: Effect) {
        switch effect {
        case .publish(let p): service?.update { $0 = p }
        case .seeked(let us): service?.emitSeeked(positionUs: us)
        case .call(let c): call(c)
        case .fetchArt(let track): fetchArt(track)
        case .fetchCovers(let tracks):
            for track in tracks {
                artWorker.submit { [weak self] in
                    guard let self else { return }
                    serveCurrentCover()  // the current track's cover first, whenever it is wanted
                    loop.submit(.coverReady(trackURI: track.uri, file: art.cover(of: track.uri, from: client)), whenFull: .wait)
                }
            }
        case .notify(let track, let file):
            artWorker.submit { [notifier] in notifier.trackChanged(track, artURI: file) }
        case .stream(let command):
            switch command {
            case .play: stream?.play()
            case .pause: stream?.pause()
            case .stop: stream?.stop()
            case .endWarm: stream?.endWarm()
            case .volume(let v): stream?.setVolume(v)
            case .configure(let c): stream?.update(config: c)
            case .retryNow: stream?.retryNow()
            case .hold(let on): stream?.hold(on)
            case .changeAnnounced(let ms): stream?.changeAnnounced(onTimeMs: ms)
            case .findBoundary(let r): stream?.findBoundary(r)
            case .watchBoundaries(let on): stream?.watchBoundaries(on)
            case .silence(let s): stream?.silence(s)
            }
        case .events(let command):
            switch command {
            case .retryNow: events?.retryNow()
            case .hold(let on): events?.hold(on)
            case .reconnect: events?.reconnect()
            }
        case .route(_, let layouts):
            guard let first = layouts.first else { return }
            client.use(first)
            events?.reconnect(urls: layouts.map(\.wsURL))
        case .useLayout(let layout): client.use(layout)
        case .probe(let route, let layouts, let stream):
            probeWorker.submit { [weak self] in
                let (answered, detail) = RouteProbe.run(layouts, stream: stream)
                self?.loop.submit(.probed(route, answered: answered, detail: detail), whenFull: .always)
            }
        case .openWebInterface:
            WebOpener.open(client.endpoints.httpBase + "/", ways: webOpeners)
        case .quit: onQuit()
        case .log(let level, let text): Log.write(level, text)
        case .signal(let iface, let member, let args): service?.emit(iface, member, args)
        case .askToSignIn(let request):
            artWorker.submit { [notifier] in notifier.askToSignIn(request) }
        }
    }

    /// How Raise opens the web interface from outside the bridge's sandbox (`WebOpener`).
    private let webOpeners = WebOpener.ways()

    /// The moment as the reducer is told it: the clock, and the stream's measured delay.
    private var now: Moment {
        let us = monotonicUs(), ms = Int(us / 1000)
        guard let f = stream?.currentFigures else { return Moment(nowUs: us) }
        return Moment(nowUs: us, streamDelayMs: f.localDelayMs(atMs: ms), streamStarvedMs: f.starvedMs(atMs: ms))
    }

    // MARK: - Mopidy calls (on "mopidy-rpc")

    private func call(_ c: MopidyCall) {
        rpc.submit { [weak self] in
            guard let self else { return }
            let reply: Reply
            do throws(MopidyError) { reply = try execute(c) } catch { reply = .failed(c, reason: error.reason) }
            loop.submit(.reply(reply), whenFull: .wait)
        }
    }

    private func execute(_ c: MopidyCall) throws(MopidyError) -> Reply {
        switch c {
        case .resync(let generation):
            let tl = try client.currentTlTrack()
            var s = Snapshot(rpcURL: client.endpoints.rpcURL, current: tl, state: try client.state(),
                             positionMs: try client.timePositionMs(), volume: try client.volume())
            s.generation = generation
            s.muted = try client.mute()
            s.repeatOn = try client.option("repeat")
            s.single = try client.option("single")
            s.random = try client.option("random")
            s.nextTlid = try client.nextTlid()
            s.previousTlid = try client.previousTlid()
            s.uriSchemes = try client.uriSchemes()
            return .synced(s)
        case .refreshNeighbours:
            return .neighbours(next: try client.nextTlid(), previous: try client.previousTlid())
        case .refreshMixer:
            return .mixer(volume: try client.volume(), muted: try client.mute())
        case .refreshOptions:
            return .options(repeatOn: try client.option("repeat"), single: try client.option("single"),
                            random: try client.option("random"))
        case .refreshTracklist:
            return .tracklist(try client.tracklistAroundCurrent(count: BridgeTuning.trackListLength + 1))
        case .refreshPlaylists:
            return .playlists(try client.playlists().map { PlaylistInfo(uri: $0.uri, name: $0.name) })
        case .addTrack(let uri, let after, let play): try client.addTrack(uri: uri, afterTlid: after, play: play)
        case .removeTrack(let tlid): try client.remove(tlid: tlid)
        case .goTo(let tlid): try client.play(tlid: tlid)
        case .activatePlaylist(let uri): return .activated(uri: uri, tlids: try client.activatePlaylist(uri: uri))
        case .play: try client.play()
        case .resume: try client.resume()
        case .pause: try client.pause()
        case .stop: try client.stop()
        case .next: try client.next()
        case .previous: try client.previous()
        case .seek(let ms): try client.seek(toMs: ms)
        case .setVolume(let v): try client.setVolume(v)
        case .setMute(let on): try client.setMute(on)
        case .setLoop(let status):
            try client.setOption("repeat", status != .none)
            try client.setOption("single", status == .track)
        case .setRandom(let on): try client.setOption("random", on)
        case .open(let uri): try client.open(uri: uri)
        }
        return .done(c)
    }

    /// Finds and downloads the track's cover, then hands it to the loop. No image: no
    /// `mpris:artUrl` key, never a broken one.
    private func fetchArt(_ track: Track) {
        artWanted.withLock { $0 = track }
        artWorker.submit { [weak self] in self?.serveCurrentCover() }
    }

    /// Fetches the cover wanted for the current track, if one is.
    private func serveCurrentCover() {
        guard let track = artWanted.withLock({ w in defer { w = nil }; return w }) else { return }
        loop.submit(.artReady(trackURI: track.uri, file: art.cover(of: track.uri, from: client)), whenFull: .wait)
    }

    // MARK: - Inputs from the other threads (each hands on and returns at once)

    /// On the D-Bus thread, which must never wait: under a flood of calls faster than the loop
    /// reduces them, the excess is dropped and said (on the 1st, 2nd, 4th, 8th … drop).
    public func perform(_ command: PlayerCommand) {
        guard !loop.submit(.command(command)) else { return }
        let n = droppedCommands.add(1, ordering: .relaxed).newValue
        if n & (n - 1) == 0 { Log.warning("MPRIS: \(n) command(s) dropped: they came faster than they could be handled") }
    }
    private let droppedCommands = Atomic<Int>(0)

    /// On one of the stream player's threads (a status under its lock): hand on, never wait.
    public func streamPlayer(_ event: StreamEvent) {
        switch event {
        case .status(let s, let sequence): loop.submit(.streamStatus(s, sequence: sequence), whenFull: .always)
        case .boundaryHeard(let b): loop.submit(.boundaryHeard(b), whenFull: .always)
        case .delayFell(let from, let to): loop.submit(.streamDelayFell(fromMs: from, toMs: to), whenFull: .always)
        case .changeHeardLater(let onTime, let later):
            loop.submit(.streamChangeHeardLater(onTimeMs: onTime, laterMs: later), whenFull: .always)
        }
    }

    /// From the system bus watcher's thread: suspend and the network (see `SystemBusWatcher`).
    public func systemBusSaid(_ event: SystemBusEvent) {
        switch event {
        case .sleeping(let on): loop.submit(.sleeping(on), whenFull: .always)
        case .network(let n): loop.submit(.network(n), whenFull: .always)
        case .report(let text): systemBusReport.withLock { $0 = text }
        }
    }

    /// On "mopidy-events": which layout RPC follows is decided on "bridge" (`.useLayout`).
    public func eventStreamConnected(url: String) { loop.submit(.eventsConnected(url: url), whenFull: .wait) }

    /// Waits while the loop is full: the socket is then not read, and the server waits too.
    public func eventStreamReceived(_ event: MopidyEvent) { loop.submit(.event(event), whenFull: .wait) }

    public func eventStreamDisconnected(reason: FailureReason, retryInMs: Int) {
        loop.submit(.eventsDisconnected(reason: reason), whenFull: .wait)
    }

    /// The delay between the server's timeline and what leaves the speaker here, while this
    /// computer plays the stream; 0 otherwise.
    public var heardDelayMs: Int {
        let m = now
        return latest.withLock { $0.heardDelayMs(m) }
    }

    /// A copy of the state as of the last input (for status and tests).
    public var currentState: BridgeState { latest.withLock { $0 } }
}
