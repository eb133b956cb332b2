import Support

extension Pipeline {
    /// One connection's way through the stages, on the decoder thread: what is read, gathered,
    /// handed to libFLAC, and the playout's state. A switch that lines up carries it on with the
    /// new connection.
    final class Session {
        var c: StreamConnection
        /// The first bytes, until they say what the stream is (`kind`).
        var head: [UInt8]
        var kind: StreamSniffer.Kind? = nil
        var reader = FrameReader(ogg: true)
        private(set) var decoder: FLACDecoder
        var playout: Playout
        var watch = BoundaryDetector.Watch()
        private let learned: Playout.Target
        var input = FLACDecoder.Input()
        // The join: the burst's frames gathered undecoded until it pauses.
        var gathering = false
        private var gathered: [FrameReader.Unit] = []
        private(set) var gatheredBytes = 0
        /// Samples the join skipped undecoded, for the next frame's position.
        private var skipped = 0
        /// The released burst is all decoded: the data paused, as far as the join goes.
        var burstOver = false
        var firstByte: Instant? = nil
        var lastByte: Instant? = nil
        var ended = false
        var failed = false
        var announcedPlaying = false
        var lastFrame: (end: Int64, format: AudioFormat)? = nil
        private var lostSync = 0
        private unowned let player: StreamPlayer
        // A switch (make before break).
        var switchTo: Switch? = nil
        var lineup: SwitchAttempt.Lineup? = nil
        var lineupFor: SwitchAttempt? = nil
        var lineupEnded = false
        var sameKind = false
        var dropBefore: Int64? = nil
        var switched = false

        /// Nil when libFLAC cannot start (no memory).
        init?(_ c: StreamConnection, head: [UInt8], keepMs: Int, learned: Playout.Target, player: StreamPlayer) {
            guard let d = FLACDecoder.counting(player) else { return nil }
            self.c = c
            self.head = head
            self.learned = learned
            self.player = player
            decoder = d
            playout = Playout(keepMs: keepMs, learned: learned, joining: .now)
        }

        /// libFLAC could not go on: a new decoder for the bytes that follow (false: none starts).
        func newDecoder() -> Bool {
            guard let d = FLACDecoder.counting(player) else { return false }
            decoder = d
            return true
        }

        /// The first bytes say `kind`: the join starts from the first byte.
        func start(_ kind: StreamSniffer.Kind) {
            self.kind = kind
            reader = FrameReader(ogg: kind == .oggFLAC)
            playout = Playout(keepMs: playout.keepMs, learned: learned, joining: firstByte ?? .now)
            gathering = playout.keepMs > 0
            reader.feed(head, arrival: lastByte ?? .now)
            head = []
            if ended { reader.finish() }
        }

        private var gatheredFrames: [(first: Int64, end: Int64)] { gathered.compactMap { $0.header.map { ($0.firstSample, $0.end) } } }

        /// The newest `keepMs`, in samples at the rate of the newest frame that counts.
        var keepSamples: Int64 {
            let rate = Playout.joinRun(gatheredFrames).first.flatMap { gathered[$0].header?.sampleRate } ?? 0
            return Int64(playout.keepMs) * Int64(rate) / 1000
        }

        /// The audio gathered that counts (`Playout.joinRun`), newest end − oldest start, samples.
        func gatheredSpan() -> Int64 {
            let frames = gatheredFrames, run = Playout.joinRun(frames)
            guard let newest = run.first, let oldest = run.last else { return 0 }
            return frames[newest].end.subtractingReportingOverflow(frames[oldest].first).partialValue
        }

        /// Units from the reader to libFLAC's input, or, while joining, frames to the gathered burst.
        func moveUnits() {
            while let u = reader.next() {
                if gathering, u.header != nil {
                    gathered.append(u)
                    gatheredBytes += u.bytes.count
                    continue
                }
                // Metadata, or a new logical stream, after gathered frames: they go first.
                if gathering && !gathered.isEmpty { release() }
                input.append(u)
            }
            if reader.lostSync != lostSync {
                let more = reader.lostSync - lostSync
                lostSync = reader.lostSync
                player.figures.withLock { $0.lostSync += more }
            }
        }

        /// Ends gathering: the frames from where the newest `keepMs` begins go to libFLAC.
        func release() {
            let start = Playout.joinStart(gatheredFrames, keepSamples: keepSamples)
            skipped = skipped.adding(saturating: Int(clamping: start.skippedSamples))
            input.append(contentsOf: gathered[start.index...])
            gathered = []
            gatheredBytes = 0
            gathering = false
            burstOver = true
        }

        func takeSkipped() -> Int {
            defer { skipped = 0 }
            return skipped
        }

        /// Every byte of the connection is decoded.
        var drained: Bool {
            ended && !gathering && input.isEmpty && reader.readyCount == 0 && !decoder.holdsBytes
        }

        /// A switch lined up: the new connection's units (its metadata, then from the frame that
        /// plays next) go on through the same playout and output.
        func follow(_ next: StreamConnection, reader: FrameReader, units: [FrameReader.Unit], from: Int64) {
            c = next
            self.reader = reader
            input = FLACDecoder.Input(units)
            decoder.startAfresh()
            dropBefore = from
            (ended, gathering, lastByte) = (false, false, .now)
            forgetLineup()
        }

        func forgetLineup() {
            lineup = nil
            lineupFor = nil
        }

        /// When the loop must look again if nothing else wakes it.
        func deadlines(_ view: StreamPlayer.View, switchAsked: Instant?) -> [Instant] {
            var d: [Instant] = []
            if kind == nil, let first = firstByte { d.append(first + StreamTuning.sniffWaitMs) }
            if case .joining(let since) = playout.phase, kind != nil {
                d.append(since + StreamTuning.joinCapMs + 1)
                if let last = lastByte { d.append(last + StreamTuning.burstGapMs) }
            }
            if case .warm(let until) = view { d.append(until) }
            if let asked = switchAsked { d.append(asked + StreamTuning.switchWaitMs + 1) }
            return d
        }
    }
}

extension FLACDecoder {
    /// A decoder whose corrupt frames count in the player's figures.
    static func counting(_ player: StreamPlayer) -> FLACDecoder? {
        FLACDecoder(corruption: { [unowned player] in player.figures.withLock { $0.lostSync += 1 } })
    }
}
