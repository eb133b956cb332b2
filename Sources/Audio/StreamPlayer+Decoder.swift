import Support

/// The player's "decoder" thread: takes the connections in order and plays each (`decode`).
extension StreamPlayer {
    func decoderLoop() {
        var sink: PulseSink? = nil
        // The sound server and sink asked for when `sink` was opened or last kept.
        var place = SinkPlace(config)
        // A connection a switch hands on to be played from its start (it could not be lined up).
        var fresh: (StreamConnection, StreamInput.Start?)? = nil
        while true {
            // Idle, the loop sleeps in poll(2) with no timeout; the sound server's messages for a
            // corked stream (moved, killed, gone) are handled meanwhile.
            guard let (c, start) = fresh ?? monitor.withLock({ handoff.isEmpty ? nil : (handoff.removeFirst(), nil) }) else {
                loop.wait(deadlineMs: nil)
                continue
            }
            letGoStale(&sink, place: place)
            place = SinkPlace(config)
            let decoded = decode(c, start: start, sink: sink)
            sink = decoded.sink
            fresh = decoded.fresh.map { (decoded.last, $0) }
            if fresh != nil { continue }
            decoded.last.decoderFinished()
            // The connection ended. When paused or stopped, silence now (cork + flush; the
            // stream stays for the next Play); when reconnecting, what is buffered plays out
            // unless the next connection will not play there (a reload).
            if !monitor.withLock({ wanted }) {
                sink?.pause()
                sink?.onOutputLost = nil
                stats.outputStopped()
            } else {
                letGoStale(&sink, place: place)
            }
            // A stream PulseAudio moved elsewhere is not reused: Play opens the configured output
            // (or the default) again.
            if sink?.lost != nil || sink?.failure != nil { sink = nil }
        }
    }

    /// The sound server and sink a configuration asks for.
    struct SinkPlace: Equatable {
        let server: String?
        let sink: String?
        init(_ c: StreamConfig) { (server, sink) = (c.pulseServer, c.sink) }
    }

    /// A sink kept from the last connection is silenced and closed at once when the next may not
    /// play there: another sound server or sink is asked for (a reload), or `pause` is and the
    /// sound server had moved the stream elsewhere under `follow`.
    private func letGoStale(_ sink: inout PulseSink?, place: SinkPlace) {
        guard let s = sink else { return }
        let c = config
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
        stats.outputStopped()
        Log.info("stream: the sound output of the last connection is closed: \(why)")
    }

    /// The sound output went away while playing (`on_output_lost = pause`): this computer stops
    /// listening as if paused, with the reason, in one locked step.
    private func outputLost(_ reason: String, generation g: Int) {
        monitor.withLock {
            guard wanted && generation == g else { return }
            Log.warning("stream: \(reason); paused (on_output_lost = pause)")
            stats.note(error: reason)
            wanted = false
            generation += 1
            current?.ring.cancel()
            current = nil
            publishLocked(.outputLost(reason: reason))
            monitor.broadcast()
        }
    }

    /// How `decode` ended: the sink for the next connection, the last connection decoded (a
    /// switch may have taken over from the first), and whether that one is to be played afresh.
    struct Decoded {
        var sink: PulseSink?
        var last: StreamConnection
        /// A switch that could not be lined up: play `last` from its start (nil: sniff it).
        var fresh: StreamInput.Start?? = nil
    }

    /// The connection whose generation the output's statuses count for (a switch moves it on).
    private final class Playing {
        var connection: StreamConnection
        init(_ c: StreamConnection) { connection = c }
    }

    /// Decodes one connection's bytes until they end, and those of the connections that switches
    /// take over from it at a frame boundary (`SwitchFollower`), through the same output.
    /// `given`: the start of `first` already read (nil: sniffed here).
    private func decode(_ first: StreamConnection, start given: StreamInput.Start?, sink: PulseSink?) -> Decoded {
        var c = first
        guard let start = given ?? StreamInput.sniff(c) else { return Decoded(sink: sink, last: c) }
        publish(.buffering, for: c.generation)
        let kind: StreamKind
        switch start.kind {
        case .success(let k): kind = k
        case .failure(let e):
            Log.error("stream: \(e)")
            c.fail(e.description)
            return Decoded(sink: sink, last: c)
        }
        let config = self.config
        var input = StreamInput(ring: c.ring, loop: loop, prefix: start.head, kind: kind, stats: stats,
                                joinKeepMs: config.joinBufferMs, joinStartedMs: start.firstByteMs)
        var settings = StreamOutput.Settings(joinKeepMs: config.joinBufferMs, sinkName: config.sink,
                                             server: config.pulseServer,
                                             lostAction: { [weak self] in self?.config.onOutputLost ?? .pause })
        settings.boundaries = boundaries
        settings.onBoundary = { [self] heard in
            (monitor.withLock { _delegate } as? StreamBoundaryDelegate)?.streamPlayer(boundaryHeard: heard)
        }
        let playing = Playing(c)
        let output = StreamOutput(
            connection: c, settings: settings, sink: sink, loop: loop, joinStartedMs: start.firstByteMs, stats: stats,
            gain: gain, onPlaying: { [self] in publish(.playing, for: playing.connection.generation) },
            onOutputLost: { [self] reason in outputLost(reason, generation: playing.connection.generation) })
        input.burst = output
        let follower = SwitchFollower(player: self, kind: kind, output: output)
        var step: SwitchFollower.Step? = nil
        // After a switch: frames of the new connection before this sample were heard already.
        var dropBefore: Int64? = nil
        var last: (end: Int64, format: AudioFormat)? = nil
        while true {
            while !c.ring.isCancelled && step == nil {
                // Native FLAC for both: the input unwraps Ogg pages itself (`OggPage.flacBody`).
                guard let decoder = FLACDecoder(container: .native,
                                                read: { buf in input.read(into: buf) },
                                                frame: { f in
                    let end = f.firstSample.addingReportingOverflow(Int64(f.samples)).partialValue
                    var first = false
                    if let from = dropBefore {
                        if end <= from { return true }
                        if f.firstSample != from {
                            Log.warning("stream: after the switch the audio goes on at sample \(f.firstSample), not \(from)")
                        }
                        dropBefore = nil
                        first = true
                    } else if let s = follower.look(at: f.firstSample, format: f.format) {
                        step = s
                        return false
                    }
                    last = (end, f.format)
                    let going = output.write(f, arrivalMs: input.arrivalMs, skippedSamples: input.takeSkippedSamples())
                    if first { self.stats.switched(heardAtMs: output.heardAtMs(ofNewest: f.format.milliseconds(frames: f.samples))) }
                    return going
                }, corruption: { [stats] in stats.lostSync() }) else {
                    c.fail("cannot start the FLAC decoder (out of memory)")
                    return Decoded(sink: output.sink, last: c)
                }
                let outcome = decoder.run()
                if step != nil { break }
                if case .failed(let why) = outcome {
                    Log.warning("stream: decoder: \(why); restarting it")
                }
                // A new Ogg logical stream (chained Ogg) starts a fresh decoder on the same bytes.
                if input.startNextChain() { continue }
                if outcome == .ended || outcome == .stopped { break }
            }
            // Ended by itself: a switch under way goes on from where it stopped.
            if step == nil && !c.ring.isCancelled, let last {
                step = follower.lookAtEnd(nextSample: last.end, format: last.format, loop: loop)
            }
            guard let s = step else { break }
            step = nil
            // A play, pause or stop came first: the old connection goes on as that left it.
            guard takeOver(s.attempt, from: c) else { continue }
            c.decoderFinished()
            c = s.attempt.connection
            switch s {
            case .fresh(_, let start):
                output.finish()
                return Decoded(sink: output.sink, last: c, fresh: .some(start))
            case .aligned(_, let prefix, let from):
                playing.connection = c
                output.follow(c)
                input = StreamInput(ring: c.ring, loop: loop, prefix: prefix, kind: kind, stats: stats,
                                    joinKeepMs: 0, joinStartedMs: monotonicMs())
                input.burst = output
                dropBefore = from
            }
        }
        output.finish()
        return Decoded(sink: output.sink, last: c)
    }
}
