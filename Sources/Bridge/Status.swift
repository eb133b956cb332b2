import Audio
import Mopidy
import Support
import Glibc

extension Bridge {
    /// What `groove-bridge status` shows, as a JSON object.
    public func statusJSON() -> String {
        let s = currentState
        var o: [String: JSON] = [
            "rpc_url": .string(client.endpoints.rpcURL),
            "ws_url": .string(client.endpoints.wsURL),
            "events": .string(s.eventsConnected ? "connected" : "disconnected"),
            "mopidy_state": .string(s.server.state.rawValue),
            "event_reconnects": .number(Double(s.eventReconnects)),
            "status": .string(s.published.playbackStatus.rawValue),
            "config": .string(s.config.description),
        ]
        if let e = s.lastError { o["last_error"] = .string(Log.scrub(e)) }
        o["network"] = .string(s.link.network == .disconnected ? "no network" : s.link.network.rawValue)
        if s.local.asleep { o["asleep"] = .bool(true) }
        o["system_bus"] = .string(systemBusReport.withLock { $0 })
        if s.config.remoteLayouts != nil {
            o["route"] = .string(s.link.route.rawValue)
            o["route_reason"] = .string(Log.scrub(s.link.routeReason))
            if let since = s.link.routeSinceMs { o["route_since"] = .string(wallClock(ofMonotonicMs: since)) }
            if s.link.route == .remote && s.link.homeAnswered { o["route_next"] = .string("home, at the next track change") }
        }
        if let w = s.config.unencryptedPasswordWarning { o["password_warning"] = .string(w) }
        o["password_source"] = .string(s.config.passwordSource.rawValue)
        if s.config.passwordSource == .keyringLocked { o["keyring"] = .string(Keyring.lockedAdvice(s.config.user)) }
        if let n = s.signInNeeded { o["sign_in"] = .string(n) }
        if let t = s.server.current?.track.name { o["title"] = .string(t) }
        if let stream {
            let f = stream.currentFigures
            o["stream_url"] = .string(stream.config.url)
            let st = stream.currentStatus
            // Held while there is no network: the retry the status names is not coming.
            o["stream"] = .string(s.link.network == .disconnected && st.isWaitingToRetry
                                  ? "no network (\(st.retryReason ?? ""))" : st.description)
            if let format = f.format { o["stream_format"] = .string(format.description) }
            if let until = stream.keptWarmUntilMs { o["stream_kept_warm_until"] = .string(wallClock(ofMonotonicMs: until)) }
            o["stream_buffer_ms"] = .number(Double(f.bufferedMs))
            // The cushion against stalls (#24): kept on purpose, waiting in the input, dropped to
            // come back towards live (whole frames, in digital silence or at a track change),
            // grown by silence before a track change.
            o["cushion_target_ms"] = .number(Double(f.cushionTargetMs))
            o["cushion_backlog_ms"] = .number(Double(f.inputBacklogMs))
            o["cushion_dropped_ms"] = .number(Double(f.droppedForLiveMs))
            o["cushion_drops"] = .number(Double(f.dropsForLive))
            o["cushion_grown_ms"] = .number(Double(f.grownAtChangesMs))
            o["heard_delay_ms"] = .number(Double(heardDelayMs))
            if s.config.heardSync {
                o["server_delay_ms"] = .number(Double(s.serverDelayMs))
                if s.config.heardSyncLearn {
                    o["server_delay_learned_from"] = .string("\(s.learner.boundaries) of \(s.learner.lookedAt) track changes")
                    if let at = s.learner.changedAtMs { o["server_delay_changed"] = .string(wallClock(ofMonotonicMs: at)) }
                }
            }
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

/// A moment on the monotonic clock, past or to come, as local wall-clock time, `2024-05-01 14:02:03`.
func wallClock(ofMonotonicMs ms: Int) -> String {
    var t = time(nil) - time_t(monotonicMs().subtracting(saturating: ms) / 1000)
    var parts = tm()
    localtime_r(&t, &parts)
    var buffer = [CChar](repeating: 0, count: 32)
    let n = strftime(&buffer, buffer.count, "%Y-%m-%d %H:%M:%S", &parts)
    return String(decoding: buffer.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
