import Audio
import DBus
import MPRIS
import Mopidy
import Support
import Synchronization

/// MPRIS ↔ Mopidy. Events from Mopidy and every RPC go through one worker thread
/// ("mopidy-rpc"), in order, so the D-Bus thread never waits on the network and the state is
/// changed in one place.
public final class Bridge: MPRISController, MopidyEventStreamDelegate, StreamPlayerDelegate, @unchecked Sendable {
    public let client: MopidyClient
    private let worker = SerialWorker(name: "mopidy-rpc")
    /// Cover art downloads, apart from the RPC worker so a slow image never delays a command.
    private let artWorker = SerialWorker(name: "cover-art")
    private let art: ArtCache
    /// Mopidy's timeline events, held until they are heard here (see `route`).
    private let timeline = DelayQueue(name: "heard-now")
    /// Worker-thread state of that hold: the last due time, and a generation that drops held
    /// events once a newer truth was published at once.
    nonisolated(unsafe) private var lastDueMs = 0
    nonisolated(unsafe) private var timelineGeneration = 0
    /// When the user last changed tracks through the bridge (monotonic ms).
    private let lastUserCommandMs = Atomic<Int>(-1_000_000)
    /// Used only on the cover-art worker.
    private let notifier: Notifier
    private let server = Mutex(ServerState())
    private let stats = Mutex(Stats())
    private let settings: Mutex<Config>
    private var service: MPRISService!
    private var events: MopidyEventStream!
    /// This computer's stream; nil when no stream URL is known.
    public private(set) var stream: StreamPlayer?
    private let onQuit: @Sendable () -> Void

    struct Stats {
        var eventsConnected = false
        var lastError: String? = nil
        var reconnects = 0
    }

    /// Where Mopidy may answer, in order of preference: one layout when the URLs were configured,
    /// Groove Audio's then plain Mopidy's when only a host was. The event stream tries them on
    /// every (re)connect and the RPC client follows the one that answered.
    public let layouts: [MopidyEndpoints]

    public init(config: Config, layouts: [MopidyEndpoints], artDirectory: String,
                onQuit: @escaping @Sendable () -> Void) {
        precondition(!layouts.isEmpty, "Bridge needs at least one Mopidy layout")
        self.layouts = layouts
        client = MopidyClient(endpoints: layouts[0])
        art = ArtCache(directory: artDirectory)
        notifier = Notifier(busAddress: nil)
        settings = Mutex(config)
        self.onQuit = onQuit
        if let url = config.effectiveStreamURL {
            stream = StreamPlayer(config: Bridge.streamConfig(config, url: url), delegate: nil)
        }
        server.withLock { s in
            s.localStream = stream == nil ? nil : .stopped
            s.volumeMode = config.volume
            s.canRaise = Bridge.browser != nil
        }
    }

    static func streamConfig(_ c: Config, url: String) -> StreamConfig {
        StreamConfig(url: url, user: c.user, password: c.password, sink: c.sink)
    }

    public var config: Config { settings.withLock { $0 } }

    /// Publishes on `connection` and starts following Mopidy (and playing, with autoplay).
    /// Returns the bus name taken, or nil when another bridge owns the name and
    /// `allowInstance` is false.
    public func start(connection: DBusConnection, allowInstance: Bool) throws(DBusFailure) -> String? {
        let initial = server.withLock { $0.playerState() }
        service = MPRISService(connection: connection, controller: self, initial: initial,
                               status: { [weak self] in self?.statusJSON() ?? "{}" })
        guard let name = try service.publish(allowInstance: allowInstance) else { return nil }
        stream.map { s in s.setDelegate(self) }
        events = MopidyEventStream(urls: layouts.map(\.wsURL), delegate: self)
        events.start()
        if config.autoplay { stream?.play() }
        return name
    }

    public func shutdown() {
        events?.stop()
        stream?.stop()
    }

    /// A new configuration (SIGHUP): the stream takes the new password, URL, sink and volume mode.
    public func reload(_ new: Config) {
        settings.withLock { $0 = new }
        // A change the stream sees reconnects it, and so does a reload while it is failed (the
        // server may have been fixed); not, say, a new server_delay_ms while it plays.
        if let url = new.effectiveStreamURL, let stream {
            let streamConfig = Bridge.streamConfig(new, url: url)
            var failed = false
            if case .failed = stream.currentStatus { failed = true }
            if streamConfig != stream.config || failed { stream.update(config: streamConfig) }
        }
        worker.submit { [self] in apply { $0.volumeMode = new.volume } }
        Log.info("configuration reloaded: \(new)")
    }

    // MARK: - The local stream (on a stream thread; handed to the worker)

    public func streamPlayer(statusChanged status: StreamStatus, sequence: Int) {
        worker.submit { [self] in apply { $0.localStream = status } }
    }

    /// Changes the server state and publishes the result.
    private func apply(_ change: (inout ServerState) -> Void) {
        let next = server.withLock { s -> PlayerState in
            change(&s)
            return s.playerState()
        }
        service.update { $0 = next }
    }

    // MARK: - Mopidy events (on "mopidy-events"; handed to the worker)

    public func eventStreamConnected(url: String) {
        if layouts.count > 1, let layout = layouts.first(where: { $0.wsURL == url }) {
            client.use(layout)
            let which = layout == layouts[0] ? "the Groove Audio layout" : "the plain Mopidy layout"
            Log.info("Mopidy answers in \(which) at \(layout.rpcURL)")
        }
        stats.withLock { $0.eventsConnected = true }
        worker.submit { [self] in resync() }
    }

    public func eventStreamReceived(_ event: MopidyEvent) {
        worker.submit { [self] in route(event) }
    }

    /// The delay between the server's timeline and what leaves the speaker here, while this
    /// computer plays the stream; 0 otherwise (nothing to align to).
    public var heardDelayMs: Int {
        guard let stream, config.heardSync, stream.currentStatus == .playing else { return 0 }
        return stream.currentFigures.localDelayMs + config.serverDelayMs
    }

    /// On the worker. Track changes and server-side pauses are published when they are heard:
    /// held for the stream delay while this computer plays. A track change the user asked for
    /// through the bridge (Next on a media key) is published at once instead, so the key feels
    /// instant; the music follows about a second later.
    private func route(_ event: MopidyEvent) {
        let timelineEvent: Bool
        switch event {
        case .trackPlaybackStarted, .trackPlaybackPaused, .trackPlaybackResumed, .trackPlaybackEnded,
             .playbackStateChanged, .seeked, .streamTitleChanged:
            timelineEvent = true
        default:
            timelineEvent = false
        }
        guard timelineEvent else { return handle(event) }
        var isStart = false
        if case .trackPlaybackStarted = event { isStart = true }
        let userAsked = monotonicMs() - lastUserCommandMs.load(ordering: .relaxed) < 3000
        let delay = heardDelayMs
        let now = monotonicMs()
        if delay <= 0 || (isStart && userAsked) || (userAsked && lastDueMs <= now) {
            if isStart {
                // Newer than anything held: drop what is still waiting.
                timelineGeneration += 1
                lastDueMs = 0
            }
            if lastDueMs <= now { return handle(event) }
        }
        let due = max(now + max(0, delay), lastDueMs)
        lastDueMs = due
        let gen = timelineGeneration
        Log.debug("heard-now: holding \(event) for \(due - now) ms")
        timeline.submit(dueMs: due) { [self] in
            worker.submit { [self] in
                guard gen == timelineGeneration else { return }
                handle(event)
            }
        }
    }

    public func eventStreamDisconnected(reason: String, retryInMs: Int) {
        stats.withLock { $0.eventsConnected = false; $0.lastError = reason; $0.reconnects += 1 }
        worker.submit { [self] in
            // Nothing is playing that we could vouch for: say so rather than show stale data.
            apply { s in
                s.connected = false
                if s.state == .playing { s.positionMs = s.serverPositionMs(nowUs: monotonicUs()); s.positionAnchorUs = monotonicUs() }
                s.state = .stopped
            }
        }
    }

    /// Fetches the whole state (events missed while disconnected are lost).
    private func resync() {
        do throws(MopidyError) {
            let tl = try client.currentTlTrack()
            let state = try client.state()
            let pos = try client.timePositionMs()
            let volume = try client.volume()
            let repeatOn = try client.option("repeat")
            let single = try client.option("single")
            let random = try client.option("random")
            let next = try client.nextTlid()
            let prev = try client.previousTlid()
            let schemes = try client.uriSchemes()
            let before = server.withLock { $0.current?.track.uri }
            // The position heard here trails the server's by the stream delay.
            let heardPos = state == .playing ? max(0, pos - heardDelayMs) : pos
            apply { s in
                s.connected = true
                s.setCurrent(tl)
                s.state = state
                s.positionMs = heardPos
                s.positionAnchorUs = monotonicUs()
                s.volume = volume
                s.repeatOn = repeatOn; s.single = single; s.random = random
                s.nextTlid = next; s.previousTlid = prev
                s.uriSchemes = schemes
            }
            Log.info("Mopidy at \(client.endpoints.rpcURL): \(describe(tl?.track)) [\(state.rawValue)]")
            if let tl, tl.track.uri != before || server.withLock({ $0.artURL == nil }) { fetchArt(for: tl.track) }
        } catch {
            fail("resync", error)
        }
    }

    private func handle(_ event: MopidyEvent) {
        switch event {
        case .trackPlaybackStarted(let tl):
            let before = server.withLock { $0.current?.track.uri }
            apply { s in
                s.setCurrent(tl); s.state = .playing; s.positionMs = 0; s.positionAnchorUs = monotonicUs()
            }
            Log.info("now playing: \(describe(tl.track))")
            if tl.track.uri != before { fetchArt(for: tl.track) }
            refreshTracklistNeighbours()
        case .trackPlaybackPaused(_, let pos):
            apply { s in s.state = .paused; s.positionMs = pos; s.positionAnchorUs = monotonicUs() }
        case .trackPlaybackResumed(_, let pos):
            apply { s in s.state = .playing; s.positionMs = pos; s.positionAnchorUs = monotonicUs() }
        case .trackPlaybackEnded:
            break  // the next track_playback_started or playback_state_changed follows
        case .playbackStateChanged(_, let new):
            apply { s in
                if s.state == .playing && new != .playing { s.positionMs = s.serverPositionMs(nowUs: monotonicUs()) }
                s.positionAnchorUs = monotonicUs()
                s.state = new
                if new == .stopped { s.positionMs = 0 }
            }
        case .seeked(let pos):
            apply { s in s.positionMs = pos; s.positionAnchorUs = monotonicUs() }
            service.emitSeeked(positionUs: Int64(pos) * 1000)
        case .volumeChanged(let v):
            apply { $0.volume = v }
        case .optionsChanged:
            do throws(MopidyError) {
                let r = try client.option("repeat"), si = try client.option("single"), ra = try client.option("random")
                apply { s in s.repeatOn = r; s.single = si; s.random = ra }
            } catch { fail("options", error) }
            refreshTracklistNeighbours()
        case .tracklistChanged:
            refreshTracklistNeighbours()
        case .streamTitleChanged(let title):
            apply { s in
                // A late title for the previous track can arrive after the new track started:
                // only a title that differs from the track's own name replaces it, and it is
                // dropped again at the next track change (setCurrent).
                guard let cur = s.current, title != cur.track.name, !title.isEmpty else { return }
                if cur.track.uri.hasPrefix("http") || cur.track.uri.hasPrefix("stream") || cur.track.name == nil {
                    s.streamTitle = title
                }
            }
        case .muteChanged, .playlistsLoaded, .playlistChanged, .other:
            break
        }
    }

    /// Finds, downloads and publishes the track's cover after its metadata went out. No image:
    /// no `mpris:artUrl` key, never a broken one. Then the track-change notification, if wanted.
    private func fetchArt(for track: Track) {
        let uri = track.uri
        artWorker.submit { [self] in
            guard server.withLock({ $0.current?.track.uri == uri }) else { return }
            var file: String? = nil
            do {
                if let image = try client.images(for: uri).first {
                    let f = try art.localURI(for: image.uri, base: client.endpoints.httpBase)
                    file = f
                    worker.submit { [self] in
                        apply { s in if s.current?.track.uri == uri { s.artURL = f } }
                    }
                } else {
                    Log.debug("cover art: none for \(uri)")
                }
            } catch {
                Log.warning("cover art for \(uri): \(error)")
            }
            if config.notify, server.withLock({ $0.current?.track.uri == uri }) {
                notifier.trackChanged(track, artURI: file)
            }
        }
    }

    private func refreshTracklistNeighbours() {
        do throws(MopidyError) {
            let n = try client.nextTlid(), p = try client.previousTlid()
            apply { s in s.nextTlid = n; s.previousTlid = p }
        } catch { fail("tracklist", error) }
    }

    private func fail(_ what: String, _ error: MopidyError) {
        stats.withLock { $0.lastError = error.description }
        Log.warning("\(what): \(error)")
    }

    private func describe(_ t: Track?) -> String {
        guard let t else { return "nothing" }
        return t.artists.isEmpty ? (t.name ?? t.uri) : "\(t.artists.joined(separator: ", ")) – \(t.name ?? t.uri)"
    }

    /// Runs an RPC on the worker; while Mopidy is unreachable it does nothing and says why.
    private func command(_ what: String, _ body: @escaping @Sendable (MopidyClient) throws(MopidyError) -> Void) {
        worker.submit { [self] in
            guard server.withLock({ $0.connected }) else {
                Log.warning("\(what): Mopidy at \(client.endpoints.rpcURL) is not connected; ignored")
                return
            }
            do throws(MopidyError) { try body(client) } catch { fail(what, error) }
        }
    }

    // MARK: - MPRIS calls (on the D-Bus thread; never block)

    /// Play always leads to music: the local stream connects, and a paused or stopped Mopidy
    /// is resumed or started.
    public func play() {
        stream?.play()
        let (state, connected) = server.withLock { ($0.state, $0.connected) }
        guard connected, state != .playing else { return }
        command("play") { c throws(MopidyError) in state == .paused ? try c.resume() : try c.play() }
    }

    /// `control = local` (default): only this computer stops listening; the house plays on.
    public func pause() {
        stream?.pause()
        if stream == nil || config.control == .server { command("pause") { c throws(MopidyError) in try c.pause() } }
    }

    public func stop() {
        stream?.stop()
        if stream == nil || config.control == .server { command("stop") { c throws(MopidyError) in try c.stop() } }
    }

    public func next() {
        lastUserCommandMs.store(monotonicMs(), ordering: .relaxed)
        command("next") { c throws(MopidyError) in try c.next() }
    }
    public func previous() {
        lastUserCommandMs.store(monotonicMs(), ordering: .relaxed)
        command("previous") { c throws(MopidyError) in try c.previous() }
    }
    public func setPosition(us: Int64) {
        command("seek") { c throws(MopidyError) in try c.seek(toMs: Int(us / 1000)) }
    }
    public func openURI(_ uri: String) {
        lastUserCommandMs.store(monotonicMs(), ordering: .relaxed)
        command("open \(uri)") { c throws(MopidyError) in
            let added = try c.add(uris: [uri])
            guard let first = added.first else {
                throw MopidyError.badReply(url: c.endpoints.rpcURL, reason: "Mopidy added nothing for \(uri)")
            }
            try c.play(tlid: first.tlid)
        }
        stream?.play()
    }

    /// `volume = server` (default): Mopidy's mixer, for the whole house; `volume = local`: this
    /// computer's output only.
    public func setVolume(_ volume: Double) {
        if config.volume == .local, let stream {
            stream.setVolume(volume)
            worker.submit { [self] in apply { $0.localVolume = volume } }
            return
        }
        let v = Int((volume * 100).rounded())
        command("volume") { c throws(MopidyError) in try c.setVolume(v) }
    }
    public func setLoopStatus(_ status: LoopStatus) {
        command("loop") { c throws(MopidyError) in
            try c.setOption("repeat", status != .none)
            try c.setOption("single", status == .track)
        }
    }
    public func setShuffle(_ on: Bool) { command("shuffle") { c throws(MopidyError) in try c.setOption("random", on) } }
    /// Opens the server's web interface in the browser.
    public func raise() {
        guard let opener = Bridge.browser else { return }
        let url = client.endpoints.httpBase + "/"
        spawnDetached([opener, url])
    }

    static let browser: String? = findExecutable("xdg-open")
    public func quit() { onQuit() }

    // MARK: - Status

    /// What `groove-bridge status` shows, as a JSON object.
    public func statusJSON() -> String {
        let s = server.withLock { $0 }
        let st = stats.withLock { $0 }
        var o: [String: JSON] = [
            "rpc_url": .string(client.endpoints.rpcURL),
            "ws_url": .string(client.endpoints.wsURL),
            "events": .string(st.eventsConnected ? "connected" : "disconnected"),
            "mopidy_state": .string(s.state.rawValue),
            "event_reconnects": .number(Double(st.reconnects)),
        ]
        if let e = st.lastError { o["last_error"] = .string(Log.scrub(e)) }
        if let t = s.current?.track.name { o["title"] = .string(t) }
        o["status"] = .string(s.playerState().playbackStatus.rawValue)
        o["config"] = .string(config.description)
        if let stream {
            let f = stream.currentFigures
            o["stream_url"] = .string(stream.config.url)
            o["stream"] = .string(stream.currentStatus.description)
            if let format = f.format { o["stream_format"] = .string(format.description) }
            o["stream_buffer_ms"] = .number(Double(f.bufferedMs))
            o["heard_delay_ms"] = .number(Double(heardDelayMs))
            o["stream_reconnects"] = .number(Double(f.reconnects))
            o["stream_bytes"] = .number(Double(f.bytesReceived))
            o["stream_corrupt_frames"] = .number(Double(f.lostSync))
            if let e = f.lastError { o["stream_last_error"] = .string(Log.scrub(e)) }
        } else {
            o["stream"] = .string("none configured")
        }
        return JSON.object(o).serialized()
    }
}
