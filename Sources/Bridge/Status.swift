import Audio
import Mopidy
import Support

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
        if let w = s.config.unencryptedPasswordWarning { o["password_warning"] = .string(w) }
        o["password_source"] = .string(s.config.passwordSource.rawValue)
        if s.config.passwordSource == .keyringLocked { o["keyring"] = .string(Keyring.lockedAdvice(s.config.user)) }
        if let n = s.signInNeeded { o["sign_in"] = .string(n) }
        if let t = s.server.current?.track.name { o["title"] = .string(t) }
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
