import DBus
import MPRIS
import Mopidy
import Support
import Synchronization

/// MPRIS ↔ Mopidy. Events from Mopidy and every RPC go through one worker thread
/// ("mopidy-rpc"), in order, so the D-Bus thread never waits on the network and the state is
/// changed in one place.
public final class Bridge: MPRISController, MopidyEventStreamDelegate, @unchecked Sendable {
    public let client: MopidyClient
    private let worker = SerialWorker(name: "mopidy-rpc")
    private let server = Mutex(ServerState())
    private let stats = Mutex(Stats())
    private var service: MPRISService!
    private var events: MopidyEventStream!
    private let onQuit: @Sendable () -> Void

    struct Stats {
        var eventsConnected = false
        var lastError: String? = nil
        var reconnects = 0
    }

    public init(endpoints: MopidyEndpoints, onQuit: @escaping @Sendable () -> Void) {
        client = MopidyClient(endpoints: endpoints)
        self.onQuit = onQuit
    }

    /// Publishes on `connection` and starts following Mopidy.
    public func start(connection: DBusConnection) throws(DBusFailure) {
        service = MPRISService(connection: connection, controller: self, initial: ServerState().playerState(),
                               status: { [weak self] in self?.statusJSON() ?? "{}" })
        try service.publish()
        events = MopidyEventStream(url: client.endpoints.wsURL, delegate: self)
        events.start()
    }

    public func shutdown() { events?.stop() }

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
        stats.withLock { $0.eventsConnected = true }
        worker.submit { [self] in resync() }
    }

    public func eventStreamReceived(_ event: MopidyEvent) {
        worker.submit { [self] in handle(event) }
    }

    public func eventStreamDisconnected(reason: String, retryInMs: Int) {
        stats.withLock { $0.eventsConnected = false; $0.lastError = reason; $0.reconnects += 1 }
        worker.submit { [self] in
            // Nothing is playing that we could vouch for: say so rather than show stale data.
            apply { s in
                s.connected = false
                if s.state == .playing { s.positionMs = s.positionNowMs(); s.positionAnchorUs = monotonicUs() }
                s.state = .stopped
                s.setCurrent(nil)
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
            apply { s in
                s.connected = true
                s.setCurrent(tl)
                s.state = state
                s.positionMs = pos
                s.positionAnchorUs = monotonicUs()
                s.volume = volume
                s.repeatOn = repeatOn; s.single = single; s.random = random
                s.nextTlid = next; s.previousTlid = prev
                s.uriSchemes = schemes
            }
            Log.info("Mopidy at \(client.endpoints.rpcURL): \(describe(tl?.track)) [\(state.rawValue)]")
        } catch {
            fail("resync", error)
        }
    }

    private func handle(_ event: MopidyEvent) {
        switch event {
        case .trackPlaybackStarted(let tl):
            apply { s in
                s.setCurrent(tl); s.state = .playing; s.positionMs = 0; s.positionAnchorUs = monotonicUs()
            }
            Log.info("now playing: \(describe(tl.track))")
            refreshTracklistNeighbours()
        case .trackPlaybackPaused(_, let pos):
            apply { s in s.state = .paused; s.positionMs = pos; s.positionAnchorUs = monotonicUs() }
        case .trackPlaybackResumed(_, let pos):
            apply { s in s.state = .playing; s.positionMs = pos; s.positionAnchorUs = monotonicUs() }
        case .trackPlaybackEnded:
            break  // the next track_playback_started or playback_state_changed follows
        case .playbackStateChanged(_, let new):
            apply { s in
                if s.state == .playing && new != .playing { s.positionMs = s.positionNowMs() }
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

    public func play() {
        let state = server.withLock { $0.state }
        command("play") { c throws(MopidyError) in state == .paused ? try c.resume() : try c.play() }
    }
    public func pause() { command("pause") { c throws(MopidyError) in try c.pause() } }
    public func stop() { command("stop") { c throws(MopidyError) in try c.stop() } }
    public func next() { command("next") { c throws(MopidyError) in try c.next() } }
    public func previous() { command("previous") { c throws(MopidyError) in try c.previous() } }
    public func setPosition(us: Int64) {
        command("seek") { c throws(MopidyError) in try c.seek(toMs: Int(us / 1000)) }
    }
    public func openURI(_ uri: String) {
        command("open \(uri)") { c throws(MopidyError) in
            let added = try c.add(uris: [uri])
            guard let first = added.first else {
                throw MopidyError.badReply(url: c.endpoints.rpcURL, reason: "Mopidy added nothing for \(uri)")
            }
            try c.play(tlid: first.tlid)
        }
    }
    public func setVolume(_ volume: Double) {
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
    public func raise() {}
    public func quit() { onQuit() }

    // MARK: - Status

    func statusJSON() -> String {
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
        return JSON.object(o).serialized()
    }
}

extension ServerState {
    func positionNowMs() -> Int {
        guard state == .playing else { return positionMs }
        return positionMs + Int((monotonicUs() - positionAnchorUs) / 1000)
    }
}
