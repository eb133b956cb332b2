import Support

extension StreamPlayer {
    /// What the decoder thread does with a connection.
    enum View: Equatable {
        /// Let go of it: stopped, paused cold, replaced, or its ring cancelled.
        case gone
        /// Play it (joining, or resuming after a warm pause, or heard already).
        case play
        /// Hold it unheard: paused here with it kept until then.
        case warm(until: Instant)
    }

    func view(of c: StreamConnection) -> View {
        monitor.withLock {
            guard !c.ring.isCancelled, life.connection === c else { return .gone }
            if case .warm(_, _, let until) = life.state { return .warm(until: until) }
            return .play
        }
    }

    /// A switch under way from `c`, if any.
    func switchUnderWay(of c: StreamConnection) -> SwitchAttempt? {
        monitor.withLock {
            guard case .switching(let w, let a) = life.state, w === c, !a.connection.ring.isCancelled else { return nil }
            return a
        }
    }

    /// The connection's life: one value under the player's lock, changed only by `apply`, which
    /// says what to do about each change (`Action`). Where it is tells the network thread
    /// whether to connect or wait, the decoder thread whether to play, hold or let go, and the
    /// delegate which status to show. Pure: table-tested (`StreamLifeTests`).
    struct Life {
        enum State {
            /// Nothing wanted: stopped, paused, or the sound output went away.
            case idle
            /// A connection is wanted, and none is made yet ("stream-http" makes it).
            case wanted
            /// The transfer is under way, no answer yet.
            case connecting(StreamConnection)
            /// The decoder has it (sniffing, joining, or resuming after a warm pause): nothing heard yet.
            case joining(StreamConnection)
            case playing(StreamConnection)
            /// Paused here with the connection kept until `until`: read and decoded, nothing heard.
            case warm(StreamConnection, since: Instant, until: Instant)
            /// Playing while a new connection lines up to take over at a frame (make before break).
            case switching(StreamConnection, SwitchAttempt)
            /// Waiting before the next attempt, until then or until the network is back (nil).
            case backingOff(until: Instant?)
            /// As `backingOff`, after what waiting will not fix (retried slowly all the same).
            case failed(until: Instant?)
        }

        enum Event {
            case play
            /// Pause; the connection is kept warm `keepWarmMs` if it plays (0: let go at once).
            case pause(keepWarmMs: Int, at: Instant)
            case stop
            /// Let go of a connection kept warm (the machine goes to sleep).
            case endWarm
            case warmExpired(StreamConnection, at: Instant)
            /// `keep_warm` changed: the pause under way is timed again from its start.
            case keepWarm(ms: Int)
            /// "stream-http" made `c` for the play of `generation`.
            case connected(StreamConnection, generation: Int)
            /// The decoder took `c` (its first bytes are in).
            case decoding(StreamConnection)
            /// The first audio of `c` is about to be heard.
            case heard(StreamConnection)
            /// `c`'s transfer ended; what to show, and when to try again.
            case ended(StreamConnection, next: StreamStatus, retryAt: Instant?)
            /// The wait before the next attempt is over, or cut short.
            case retry
            case switchStarted(SwitchAttempt)
            /// The decoder lined the attempt up and plays it from here.
            case switchTaken(from: StreamConnection, SwitchAttempt)
            /// The connection a switch was lining up with ended, or a play, pause or stop came.
            case switchDropped
            case outputLost(StreamConnection, reason: String)
        }

        enum Action {
            /// Both threads let go of this connection (the ring is cancelled).
            case cancel(StreamConnection)
            /// The delegate hears this status, with this sequence number.
            case publish(StreamStatus, sequence: Int)
            /// The decoder looks again at once (a pause, a Play, a new end of a warm pause).
            case wakeDecoder
            /// "stream-http" follows the attempt's connection once the old transfer ends.
            case follow(StreamConnection, SwitchAttempt)
            case log(Log.Level, String)
        }

        private(set) var state = State.idle
        /// The status last published.
        private(set) var status = StreamStatus.stopped
        private(set) var sequence = 0
        /// Counts play, pause, stop and a lost output: "stream-http" makes a connection only for
        /// the newest.
        private(set) var generation = 0

        /// The connection being made, played or kept (nil: none).
        var connection: StreamConnection? {
            switch state {
            case .connecting(let c), .joining(let c), .playing(let c), .warm(let c, _, _), .switching(let c, _): return c
            case .idle, .wanted, .backingOff, .failed: return nil
            }
        }

        /// The connection heard or on its way to be (not kept warm).
        var wanted: StreamConnection? {
            if case .warm = state { return nil }
            return connection
        }

        /// Something is to be heard: not stopped, paused or kept warm.
        var isWanted: Bool {
            switch state {
            case .idle, .warm: return false
            default: return true
            }
        }

        var isWaitingToRetry: Bool {
            switch state {
            case .backingOff, .failed: return true
            default: return false
            }
        }

        var switchUnderWay: SwitchAttempt? {
            if case .switching(_, let a) = state { return a }
            return nil
        }

        mutating func apply(_ e: Event) -> [Action] {
            var out: [Action] = []
            switch e {
            case .play, .pause, .stop, .endWarm, .warmExpired, .keepWarm: control(e, &out)
            case .connected, .decoding, .heard, .ended, .retry: progress(e, &out)
            case .switchStarted, .switchTaken, .switchDropped, .outputLost: replace(e, &out)
            }
            return out
        }

        /// What the user (through the bridge) asks for.
        private mutating func control(_ e: Event, _ out: inout [Action]) {
            switch e {
            case .play:
                generation += 1
                if case .warm(let c, _, _) = state {
                    // The decoder writes what it holds, and says `.playing`.
                    state = .joining(c)
                    publish(.buffering, &out)
                    out.append(.wakeDecoder)
                } else {
                    letGo(&out)
                    state = .wanted
                }
            case .pause(let warmMs, let now):
                generation += 1
                dropSwitch(&out)
                if case .warm = state {
                    // A second pause does not extend the first.
                } else if warmMs > 0, status == .playing, case .playing(let c) = state {
                    state = .warm(c, since: now, until: now + warmMs)
                    out.append(.wakeDecoder)
                    out.append(.log(.info, "stream: paused; connected for \(warmMs / 1000) s more (keep_warm)"))
                } else {
                    letGo(&out)
                    state = .idle
                }
                publish(.paused, &out)
            case .stop:
                generation += 1
                letGo(&out)
                state = .idle
                publish(.stopped, &out)
            case .endWarm:
                guard case .warm(let c, _, _) = state else { break }
                out.append(.cancel(c))
                state = .idle
            case .warmExpired(let c, let now):
                guard case .warm(let w, _, let until) = state, w === c, now >= until else { break }
                out.append(.cancel(c))
                out.append(.log(.info, "stream: kept warm long enough after the pause; disconnected"))
                state = .idle
            case .keepWarm(let ms):
                guard case .warm(let c, let since, _) = state else { break }
                state = .warm(c, since: since, until: since + ms)
                out.append(.wakeDecoder)
            default: break
            }
        }

        /// What the network and decoder threads tell of a connection.
        private mutating func progress(_ e: Event, _ out: inout [Action]) {
            switch e {
            case .connected(let c, let g):
                guard case .wanted = state, g == generation else {
                    out.append(.cancel(c))
                    break
                }
                state = .connecting(c)
                publish(.connecting, &out)
            case .decoding(let c):
                switch state {
                case .connecting(let w) where w === c, .playing(let w) where w === c:
                    state = .joining(c)
                    publish(.buffering, &out)
                default: break
                }
            case .heard(let c):
                guard case .joining(let w) = state, w === c else { break }
                state = .playing(c)
                publish(.playing, &out)
            case .ended(let c, let next, let retryAt):
                if case .warm(let w, _, _) = state, w === c {
                    state = .idle  // nothing left to resume: the next Play connects anew
                    break
                }
                guard wanted === c else { break }
                dropSwitch(&out)
                if case .failed = next { state = .failed(until: retryAt) } else { state = .backingOff(until: retryAt) }
                publish(next, &out)
            case .retry:
                switch state {
                case .backingOff, .failed: state = .wanted
                default: break
                }
            default: break
            }
        }

        /// A connection replaced by another while it plays, or the output gone from under it.
        private mutating func replace(_ e: Event, _ out: inout [Action]) {
            switch e {
            case .switchStarted(let a):
                switch state {
                case .playing(let c), .switching(let c, _):
                    dropSwitch(&out)
                    state = .switching(c, a)
                default:
                    out.append(.cancel(a.connection))
                }
            case .switchTaken(let old, let a):
                guard case .switching(let c, let w) = state, c === old, w === a else { break }
                out.append(.follow(old, a))
                out.append(.cancel(old))
                state = .playing(a.connection)
            case .switchDropped:
                dropSwitch(&out)
            case .outputLost(let c, let reason):
                guard wanted === c else { break }
                generation += 1
                out.append(.log(.warning, "stream: \(reason); paused (on_output_lost = pause)"))
                letGo(&out)
                state = .idle
                publish(.outputLost(reason: reason), &out)
            default: break
            }
        }

        private mutating func publish(_ s: StreamStatus, _ out: inout [Action]) {
            guard status != s else { return }
            status = s
            sequence += 1
            out.append(.publish(s, sequence: sequence))
        }

        /// Lets go of the connection and any switch under way.
        private mutating func letGo(_ out: inout [Action]) {
            dropSwitch(&out)
            if let c = connection { out.append(.cancel(c)) }
        }

        private mutating func dropSwitch(_ out: inout [Action]) {
            guard case .switching(let c, let a) = state else { return }
            out.append(.cancel(a.connection))
            state = .playing(c)
        }
    }
}
