import Support

/// The player's "decoder" thread: takes the connections in order and plays each (`decode`).
extension StreamPlayer {
    func decoderLoop() {
        var sink: PulseSink? = nil
        while true {
            // Idle, the loop sleeps in poll(2) with no timeout; the sound server's messages for a
            // corked stream (moved, killed, gone) are handled meanwhile.
            guard let c = monitor.withLock({ handoff.isEmpty ? nil : handoff.removeFirst() }) else {
                loop.wait(deadlineMs: nil)
                continue
            }
            sink = decode(c, sink: sink)
            c.decoderFinished()
            // The connection ended. When paused or stopped, silence now (cork + flush; the
            // stream stays for the next Play); when reconnecting, what is buffered plays out.
            if !monitor.withLock({ wanted }) {
                sink?.pause()
                sink?.onOutputLost = nil
                stats.outputStopped()
            }
            // A stream PulseAudio moved elsewhere is not reused: Play opens the configured output
            // (or the default) again.
            if sink?.lost != nil || sink?.failure != nil { sink = nil }
        }
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

    /// Decodes one connection's bytes until they end; returns the sink for the next one.
    private func decode(_ c: StreamConnection, sink: PulseSink?) -> PulseSink? {
        guard let start = StreamInput.sniff(c) else { return sink }
        publish(.buffering, for: c.generation)
        let kind: StreamKind
        switch start.kind {
        case .success(let k): kind = k
        case .failure(let e):
            Log.error("stream: \(e)")
            c.fail(e.description)
            return sink
        }
        let config = self.config
        let input = StreamInput(ring: c.ring, loop: loop, prefix: start.head, kind: kind, stats: stats,
                                joinKeepMs: config.joinBufferMs, joinStartedMs: start.firstByteMs)
        var settings = StreamOutput.Settings(joinKeepMs: config.joinBufferMs, sinkName: config.sink,
                                             server: config.pulseServer,
                                             lostAction: { [weak self] in self?.config.onOutputLost ?? .pause })
        settings.boundaries = boundaries
        settings.onBoundary = { [self] heard in
            (monitor.withLock { _delegate } as? StreamBoundaryDelegate)?.streamPlayer(boundaryHeard: heard)
        }
        let output = StreamOutput(
            connection: c, settings: settings, sink: sink, loop: loop, joinStartedMs: start.firstByteMs, stats: stats,
            gain: gain, onPlaying: { [self] in publish(.playing, for: c.generation) },
            onOutputLost: { [self] reason in outputLost(reason, generation: c.generation) })
        input.burst = output
        while !c.ring.isCancelled {
            // Native FLAC for both: the input unwraps Ogg pages itself (`OggPage.flacBody`).
            guard let decoder = FLACDecoder(container: .native,
                                            read: { buf in input.read(into: buf) },
                                            frame: { f in output.write(f, arrivalMs: input.arrivalMs, skippedSamples: input.takeSkippedSamples()) },
                                            corruption: { [stats] in stats.lostSync() }) else {
                c.fail("cannot start the FLAC decoder (out of memory)")
                return output.sink
            }
            let outcome = decoder.run()
            if case .failed(let why) = outcome {
                Log.warning("stream: decoder: \(why); restarting it")
            }
            // A new Ogg logical stream (chained Ogg) starts a fresh decoder on the same bytes.
            if input.startNextChain() { continue }
            if outcome == .ended || outcome == .stopped { break }
        }
        output.finish()
        return output.sink
    }
}
