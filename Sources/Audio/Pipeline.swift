import Support

/// The "decoder" thread: one connection at a time through the stages, one way — the source's
/// bytes (the connection's ring) → decode (`FrameReader`, then `FLACDecoder`) → the playout's
/// decision for each frame (`Playout`) → the output queue (`OutputQueue`) → the sound server
/// (`PulseSink`). It waits in one place, its `AudioLoop` (for bytes, room, a control change or a
/// deadline), where libpulse's messages are handled too; nothing it calls waits. It reads bytes
/// only when it needs them, so a backlog waits in the ring, dated, where the playout measures it.
/// Not thread-safe: the thread owns it.
final class Pipeline {
    let player: StreamPlayer
    private let loop: AudioLoop
    private var sink: PulseSink?
    /// The connection being played (the sink's loss is told for it).
    private var current: Session?
    /// The sound server and sink asked for when `sink` was opened or last kept.
    private var place: SinkPlace
    private var queue = OutputQueue()
    private let converter = PCMConverter()
    /// The cushion learned from the link, carried from one connection's playout to the next.
    private var learned = Playout.Target()
    var scratch = [UInt8](repeating: 0, count: StreamTuning.oggReadBytes)

    init(player: StreamPlayer) {
        self.player = player
        loop = player.loop
        place = SinkPlace(player.config)
    }

    struct SinkPlace: Equatable {
        let server: String?
        let sink: String?
        init(_ c: StreamConfig) { (server, sink) = (c.pulseServer, c.sink) }
    }

    func run() {
        var fresh: (StreamConnection, [UInt8])? = nil
        while true {
            // Idle, the loop sleeps in poll(2) with no timeout; the sound server's messages for a
            // corked stream (moved, killed, gone) are handled meanwhile.
            guard let (c, head) = fresh ?? player.monitor.withLock({ player.handoff.isEmpty ? nil : (player.handoff.removeFirst(), []) })
            else {
                loop.wait(deadlineMs: nil)
                continue
            }
            letGoStale()
            place = SinkPlace(player.config)
            guard let s = Session(c, head: head, keepMs: player.config.joinBufferMs, learned: learned, player: player) else {
                c.fail("cannot start the FLAC decoder (out of memory)")
                c.decoderFinished()
                continue
            }
            queue.removeAll()
            fresh = play(s)
            learned = s.playout.target
            if fresh != nil { continue }
            s.c.decoderFinished()
            // The connection ended. When paused or stopped, silence now (cork + flush; the
            // stream stays for the next Play); when reconnecting, what is buffered plays out
            // unless the next connection will not play there (a reload).
            if !player.monitor.withLock({ player.life.isWanted }) {
                sink?.pause()
                sink?.onOutputLost = nil
                outputStopped()
            } else {
                letGoStale()
            }
            // A stream PulseAudio moved elsewhere is not reused: Play opens the configured output
            // (or the default) again.
            if sink?.lost != nil || sink?.failure != nil { sink = nil }
        }
    }

    /// A sink kept from the last connection is silenced and closed at once when the next may not
    /// play there: another sound server or sink is asked for (a reload), or `pause` is and the
    /// sound server had moved the stream elsewhere under `follow`.
    private func letGoStale() {
        guard let s = sink else { return }
        let c = player.config
        let why: String
        if SinkPlace(c) != place {
            why = "another output is asked for"
        } else if s.isElsewhere(lostAction: c.onOutputLost, sinkName: c.sink) {
            why = "it plays on '\(s.device ?? "another output")', not the one asked for (on_output_lost = pause)"
        } else {
            return
        }
        s.pause()
        s.onOutputLost = nil
        sink = nil
        outputStopped()
        Log.info("stream: the sound output of the last connection is closed: \(why)")
    }

    private func outputStopped() { player.figures.withLock { $0.outputStopped(atMs: monotonicMs()) } }

    // MARK: - One connection

    /// Plays `s.c` (and the connections switches take over from it at a frame) until its bytes
    /// end or it is let go. Returns a connection to play afresh next: a switch that could not be
    /// lined up, with the bytes already read of it.
    private func play(_ s: Session) -> (StreamConnection, [UInt8])? {
        player.figures.withLock { $0.delayUnmeasured() }
        current = s
        defer { current = nil }
        while true {
            let view = player.view(of: s.c)
            guard view != .gone, !s.failed else { return nil }
            follow(view, s)
            guard write(s) else { return nil }
            if let a = s.switchTo {
                s.switchTo = nil
                if let fresh = take(a, s) { return fresh }
                continue
            }
            if decodeStep(s) || read(s) || endJoin(s) { continue }
            if s.drained && (s.playout.phase != .flowing || queue.isEmpty) {
                // Ended by itself: a switch under way goes on from where it stopped.
                guard let a = player.switchUnderWay(of: s.c), let last = s.lastFrame else { return nil }
                s.switchTo = lineUp(a, at: last.end, format: last.format, s)
                if s.switchTo == nil { loop.wait(deadlineMs: monotonicMs() + 20) }
                continue
            }
            let now = Instant.now
            let deadlines = s.deadlines(view, switchAsked: player.switchUnderWay(of: s.c)?.requested)
            loop.wait(deadlineMs: deadlines.filter { $0 > now }.min()?.ms)
        }
    }

    /// A pause that keeps the connection silences the output and holds what was flushed unheard
    /// (and what is decoded meanwhile, the newest `keepMs`); a Play resumes it at once; the time
    /// kept runs out.
    private func follow(_ view: StreamPlayer.View, _ s: Session) {
        let now = Instant.now
        if case .warm(let until) = view {
            if case .warm = s.playout.phase {} else {
                sink?.pause()
                s.announcedPlaying = false
                queue.rewind(keepMs: s.playout.keepMs)
                s.playout.paused(at: now)
                outputStopped()
            }
            if now >= until { player.change(.warmExpired(s.c, at: now)) }
        } else if case .warm = s.playout.phase {
            s.playout.resumed(heldMs: queue.heldMs, at: now)
            tell(s)
        }
    }

    // MARK: Source

    /// Reads what the connection has, without waiting, when it is needed: to sniff, to gather the
    /// join, or when nothing is left to decode and the playout can take a frame (not while one
    /// waits for room: then a byte that comes does not wake this thread). True when something came.
    private func read(_ s: Session) -> Bool {
        let wanted = s.input.isEmpty && s.reader.readyCount == 0 && (s.playout.phase != .flowing || queue.isEmpty)
        guard !s.ended, s.kind == nil || s.gathering || wanted else { return false }
        let r = scratch.withUnsafeMutableBytes { s.c.ring.tryRead(into: $0) }
        switch r {
        case .empty: return false
        case .bytes(let n, let arrival):
            s.lastByte = .now
            if s.firstByte == nil { s.firstByte = s.lastByte }
            if s.kind == nil {
                s.head += scratch[0..<n]
            } else {
                s.reader.feed(scratch[0..<n], arrival: arrival)
            }
        case .ended:
            s.ended = true
            if s.kind != nil { s.reader.finish() }
        }
        if s.kind == nil { sniff(s) }
        s.moveUnits()
        return true
    }

    /// Tells what the first bytes are: the magic bytes decide at once; an inconclusive start (a
    /// native mount joined mid-stream: quiet audio compresses to little) gets up to
    /// `sniffWaitMs` to show its frames.
    private func sniff(_ s: Session) {
        let verdict = StreamSniffer.classify(Array(s.head.prefix(StreamTuning.sniffBytes)), contentType: s.c.contentType, url: s.c.url)
        let waited = s.firstByte.map { Instant.now - $0 >= StreamTuning.sniffWaitMs } ?? false
        if case .failure = verdict, !(s.ended || waited || s.head.count >= StreamTuning.sniffBytes) { return }
        guard !s.head.isEmpty else { return }
        player.change(.decoding(s.c))
        switch verdict {
        case .success(let kind):
            s.start(kind)
        case .failure(let e):
            Log.error("stream: \(e)")
            s.c.fail(e.description)
            s.failed = true
        }
    }

    // MARK: Decode

    /// One step of libFLAC on what is there, when the playout can take a frame (holding, or
    /// nothing waits to be written). True when it went.
    private func decodeStep(_ s: Session) -> Bool {
        guard s.kind != nil, s.playout.phase != .flowing || queue.isEmpty,
              let outcome = s.decoder.step(&s.input, frame: { handle($0, arrival: $1, s) }) else { return false }
        if case .failed(let why) = outcome {
            Log.warning("stream: decoder: \(why); restarting it")
            if !s.newDecoder() {
                s.c.fail("cannot start the FLAC decoder (out of memory)")
                s.failed = true
            }
        }
        return true
    }

    /// A decoded frame, inside libFLAC's write callback: never waits.
    private func handle(_ f: DecodedFrame, arrival: Instant, _ s: Session) {
        let now = Instant.now
        player.figures.withLock {
            $0.samplesDecoded += f.samples
            $0.format = f.format
        }
        if let from = s.dropBefore {
            // After a switch: frames of the new connection before this sample were heard already.
            if f.firstSample.addingReportingOverflow(Int64(f.samples)).partialValue <= from { return }
            if f.firstSample != from { Log.warning("stream: after the switch the audio goes on at sample \(f.firstSample), not \(from)") }
            s.dropBefore = nil
            s.switched = true
        } else if let a = player.switchUnderWay(of: s.c), let to = lineUp(a, at: f.firstSample, format: f.format, s) {
            s.switchTo = to  // this frame is heard from the new connection
            return
        }
        s.lastFrame = (f.firstSample.addingReportingOverflow(Int64(f.samples)).partialValue, f.format)
        let start = s.playout.delay.position
        let changes = player.announced.withLock { a in defer { a.removeAll(keepingCapacity: true) }; return a }
        if !changes.isEmpty { s.playout.announced(changes) }
        let house = player.houseSilence.withLock { $0 }
        let d = s.playout.decide(samples: f.samples, format: f.format, arrival: arrival, skippedSamples: s.takeSkipped(),
                                 house: house, at: now, silent: { f.isDigitalSilence })
        if player.watching.load(ordering: .relaxed) {
            let requests = player.boundaryRequests.withLock { r in defer { r.removeAll(keepingCapacity: true) }; return r }
            s.watch.decoded(f, at: start, requests: requests, originMs: s.playout.delay.originMs, now: now) { [player] in
                player.tell(.boundaryHeard($0))
            }
        }
        if d.fate != .drop { queueUp(f, d, s) }
        if s.switched {
            s.switched = false
            let heardAt = sink?.latencyUs().map { now.ms + $0 / 1000 + queue.heldMs - f.format.milliseconds(frames: f.samples) }
            player.figures.withLock {
                $0.seamlessSwitches += 1
                $0.lastSwitchHeardAtMs = heardAt
            }
        }
        _ = s.playout.joinEnds(heldMs: queue.heldMs, droppedMs: queue.droppedMs, idle: false, ended: false, at: now)
        tell(s)
    }

    /// A frame to be heard (or held), converted with the volume into the output queue, after the
    /// silence the playout puts before it, with what it mutes silent.
    private func queueUp(_ f: DecodedFrame, _ d: Playout.Decision, _ s: Session) {
        queue.use(f.format)
        queue.appendSilence(ms: min(d.silenceMs, 2 * StreamTuning.cushionCapMs))
        let level = d.houseMuted ? 0 : player.volume.withLock { $0 }
        let bytes = f.samples * f.format.sinkBytesPerFrame
        let ms = f.format.milliseconds(frames: f.samples)
        // The muted part in whole sample frames: all of it when it covers the frame's length.
        let muted = d.mutedMs <= 0 ? 0 : d.mutedMs >= ms ? bytes : min(bytes, f.format.sinkBytes(milliseconds: d.mutedMs))
        queue.append(bytes: bytes, ms: ms) { raw in
            converter.convert(f, volume: level, into: raw)
            UnsafeMutableRawBufferPointer(rebasing: raw[..<muted]).initializeMemory(as: UInt8.self, repeating: 0)
        }
        if d.fate == .hold { queue.trim(keepMs: s.playout.keepMs) }
    }

    /// Ends the join when it is due: the burst gathered undecoded is let through from where the
    /// newest `keepMs` begins once the data pauses; what that decodes to is heard once it is all
    /// decoded, or when the data pauses with enough held, or at the cap, or when the bytes end.
    private func endJoin(_ s: Session) -> Bool {
        guard case .joining(let since) = s.playout.phase, s.kind != nil else { return false }
        let now = Instant.now
        let idle = s.lastByte.map { now - $0 >= StreamTuning.burstGapMs } ?? false
        if s.gathering {
            guard s.ended || idle && s.gatheredSpan() >= s.keepSamples || now - since > StreamTuning.joinCapMs
                || s.gatheredBytes > StreamTuning.ringBytes else { return false }
            s.release()
            return true
        }
        guard s.input.isEmpty, !s.decoder.holdsBytes else { return false }
        defer { s.burstOver = false }
        guard s.playout.joinEnds(heldMs: queue.heldMs, droppedMs: queue.droppedMs, idle: idle || s.burstOver,
                                 ended: s.ended, at: now) else { return false }
        tell(s)
        return true
    }

    // MARK: Output

    /// What the queue holds, to the sound server as it has room, while the playout lets it flow;
    /// the heard delay is measured at each write. False when the output failed or went away.
    private func write(_ s: Session) -> Bool {
        guard s.playout.phase == .flowing, let format = queue.format, !queue.isEmpty else { return true }
        guard let sink = openSink(format, s) else { return false }
        // At the join or a resume, what is held goes at once: it fills the sound server's
        // prebuffer, so playback starts now and its first timing report is of it playing.
        var room = 0
        if !s.announcedPlaying {
            // Once per connection (and per resume): later writes must not hide a "reconnecting"
            // that the network thread reported while buffered audio still plays out.
            s.announcedPlaying = true
            sink.play()
            player.change(.heard(s.c))
            room = queue.heldBytes
        }
        while !queue.isEmpty, max(room, sink.writable) >= min(queue.heldBytes, max(sink.pieceBytes, 1)),
              let bytes = queue.waiting(max: max(room, sink.writable)) {
            room = 0
            sink.write(bytes)
            if let failure = sink.failure { return failed(failure, s) }
            queue.wrote(bytes.count, keepMs: s.playout.keepMs)
            s.c.addPlayed(format.milliseconds(bytes: bytes.count))
            measure(sink, s)
        }
        if let failure = sink.failure { return failed(failure, s) }
        return true
    }

    /// From the sound server's timing report, extrapolated by the clock: no round trip per write.
    private func measure(_ sink: PulseSink, _ s: Session) {
        guard let us = sink.latencyUs() else { return }
        let now = Instant.now
        guard let m = s.playout.measured(soundServerMs: us / 1000, heldMs: queue.heldMs, at: now) else { return }
        let target = s.playout.target.targetMs
        let fell = player.figures.withLock { f in
            f.cushionTargetMs = target
            f.inputBacklogMs = m.backlogMs
            return f.measured(bufferedMs: m.soundServerMs, delayMs: m.delayMs, atMs: now.ms)
        }
        if let fell { player.tell(.delayFell(fromMs: fell.fromMs, toMs: fell.toMs)) }
        tell(s)
    }

    /// The sink for `format`, opened anew when the format changed or the old one failed.
    private func openSink(_ format: AudioFormat, _ s: Session) -> PulseSink? {
        if let sink, sink.format == format, sink.failure == nil, sink.lost == nil { return sink }
        sink = nil
        let lostAction: () -> OutputLostAction = { [player] in player.config.onOutputLost }
        do throws(PulseSink.Failure) {
            let new = try PulseSink.open(format, server: place.server, sink: place.sink, loop: loop, lostAction: lostAction)
            new.onOutputLost = { [weak self] reason in self?.outputLost(reason) }
            sink = new
        } catch {
            // The output asked for went away before the stream reached it: as when it goes while
            // playing (`on_output_lost = pause`), this computer pauses instead of retrying.
            if error.missing && lostAction() == .pause {
                player.change(.outputLost(s.c, reason: error.message))
            } else {
                _ = failed(error, s)
            }
            return nil
        }
        Log.info("stream: playing \(format)")
        return sink
    }

    /// The sink went away while playing (`on_output_lost = pause`), already silent: this computer
    /// stops listening, as after a pause (called within the loop's wait).
    private func outputLost(_ reason: String) {
        if let s = current { player.change(.outputLost(s.c, reason: reason)) }
    }

    /// The sound server went away or refused: this connection ends and the usual backoff applies
    /// (it may be back soon).
    private func failed(_ error: PulseSink.Failure, _ s: Session) -> Bool {
        sink = nil
        player.figures.withLock { $0.lastError = Log.scrub(error.message) }
        Log.error("stream: \(error.message)")
        s.c.fail(error.message, permanent: false)
        s.failed = true
        return false
    }

    /// What the playout told: the log, the figures, the bridge.
    private func tell(_ s: Session) {
        guard !s.playout.notes.isEmpty else { return }
        for n in s.playout.takeNotes() {
            switch n {
            case .log(let level, let text): Log.write(level, text)
            case .droppedForLive(let ms):
                player.figures.withLock {
                    $0.droppedForLiveMs = $0.droppedForLiveMs.adding(saturating: ms)
                    $0.dropsForLive += 1
                }
            case .grewAtChange(let ms):
                player.figures.withLock {
                    $0.grownAtChangesMs = $0.grownAtChangesMs.adding(saturating: ms)
                    $0.growthsAtChanges += 1
                }
            case .changeHeardLater(let onTime, let later): player.tell(.changeHeardLater(onTimeMs: onTime.ms, laterMs: later))
            case .joined(let skipped): player.figures.withLock { $0.skippedAtJoinMs = skipped }
            }
        }
    }
}
