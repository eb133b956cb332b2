import Support

extension Pipeline {
    /// What a switch under way does at a frame of the old connection.
    enum Switch {
        /// The new connection lines up: its `units` (metadata, then from the frame at `from`)
        /// are decoded next, and its `reader` goes on with its bytes.
        case aligned(SwitchAttempt, reader: FrameReader, units: [FrameReader.Unit], from: Int64)
        /// It cannot: it is played from its start, as a reconnect would (`head`: what it sent).
        case fresh(SwitchAttempt, head: [UInt8])

        var attempt: SwitchAttempt {
            switch self {
            case .aligned(let a, _, _, _), .fresh(let a, _): return a
            }
        }
    }

    /// Before the old connection's frame at `sample` is heard: whether the switch `a` takes over
    /// there (nil: not yet, the old one's is heard). Drains what the new connection has received,
    /// without waiting, into its `Lineup`.
    func lineUp(_ a: SwitchAttempt, at sample: Int64, format: AudioFormat, _ s: Session) -> Switch? {
        if s.lineupFor !== a {
            s.lineupFor = a
            s.lineup = SwitchAttempt.Lineup(ogg: s.kind == .oggFLAC, maxBytes: StreamTuning.switchHoldBytes,
                                            maxApartSamples: Int64(format.sampleRate) * StreamTuning.switchApartSeconds)
            (s.lineupEnded, s.sameKind) = (false, false)
        }
        drain(a.connection, s)
        guard let lineup = s.lineup, let kind = s.kind else { return nil }
        let waited = Instant.now - a.requested
        let held = lineup.bytes
        if !s.sameKind && (held.count >= StreamTuning.sniffBytes || (s.lineupEnded && !held.isEmpty)) {
            let sniffed = StreamSniffer.classify(Array(held.prefix(StreamTuning.sniffBytes)), contentType: a.connection.contentType,
                                                 url: a.connection.url)
            guard sniffed == .success(kind) else { return fresh(a, why: "the new connection is not the same kind of stream", s) }
            s.sameKind = true
        }
        switch lineup.verdict(at: sample, sampleRate: format.sampleRate) {
        case .ready(let k):
            Log.info("stream: \(a.connection.url) lined up at sample \(sample), \(waited) ms after asking; switching there")
            return .aligned(a, reader: lineup.reader, units: lineup.metadata + lineup.frames[k...], from: sample)
        case .impossible(let why):
            return fresh(a, why: why, s)
        case .wait:
            if s.lineupEnded { return fresh(a, why: "the new connection ended before it reached what plays", s) }
            if waited > StreamTuning.switchWaitMs {
                return fresh(a, why: "the new connection did not reach what plays within \(StreamTuning.switchWaitMs) ms", s)
            }
            return nil
        }
    }

    private func fresh(_ a: SwitchAttempt, why: String, _ s: Session) -> Switch {
        Log.warning("stream: cannot line \(a.connection.url) up with what plays: \(why); switching as a reconnect would")
        return .fresh(a, head: s.lineup?.bytes ?? [])
    }

    /// What the new connection has received so far, without waiting, up to the lineup's bound.
    private func drain(_ c: StreamConnection, _ s: Session) {
        while !s.lineupEnded, let held = s.lineup?.bytes.count, held < StreamTuning.switchHoldBytes {
            let room = min(scratch.count, StreamTuning.switchHoldBytes - held)
            switch scratch.withUnsafeMutableBytes({ c.ring.tryRead(into: UnsafeMutableRawBufferPointer(rebasing: $0[0..<room])) }) {
            case .bytes(let n, let arrival): s.lineup?.feed(scratch[0..<n], arrival: arrival)
            case .empty: return
            case .ended: s.lineupEnded = true
            }
        }
    }

    /// The decoder takes the switch over: when it still counts (no play, pause, stop or newer
    /// switch came), the old connection ends with "stream-http" told to follow the new one.
    /// Returns the new connection to play afresh when it could not line up.
    func take(_ sw: Switch, _ s: Session) -> (StreamConnection, [UInt8])? {
        let a = sw.attempt
        defer { s.forgetLineup() }
        guard player.change(.switchTaken(from: s.c, a)).connection === a.connection else { return nil }
        s.c.decoderFinished()
        switch sw {
        case .fresh(_, let head):
            return (a.connection, head)
        case .aligned(_, let reader, let units, let from):
            s.follow(a.connection, reader: reader, units: units, from: from)
            return nil
        }
    }
}
