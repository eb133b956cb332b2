// The fuzz build (scripts/fuzz playout) compiles this file with Support's into one module.
#if canImport(Support)
import Support
#endif

/// Every timing and size of the stream path, each with what it trades ("… vs. …"). `StreamConfig`
/// takes its per-instance defaults from here (tests shorten some); the rest is fixed.
enum StreamTuning {
    // MARK: Reconnecting (the transient waits are `RetrySchedule.home`'s, shared with the events socket)

    /// Retry interval for what waiting will not fix (wrong password, not FLAC, untrusted
    /// certificate): picks up a fixed server by itself vs. log lines and requests in vain.
    static let slowRetryMs = RetrySchedule.home.permanentMs
    /// A connection that played this long ends the outage: a flaky server is retried quickly again
    /// vs. a server that drops every connection after a few seconds retried quickly for ever.
    static let playedBeforeResetMs = 10_000

    // MARK: Network

    /// Less than 1 byte/s for this long ends the connection as stalled: an outage noticed sooner
    /// vs. false alarms while a native mount's first bytes take seconds during silence.
    static let stallSeconds = 8
    /// TCP (and TLS) connect limit: a dead host noticed sooner vs. a slow network refused.
    static let connectTimeoutMs = 5000
    /// Bytes between the network and the decoder (~3 s of 44.1 kHz FLAC): Icecast's whole
    /// connect burst fits without blocking the transfer vs. memory held per connection.
    static let ringBytes = 512 * 1024
    /// How long the network thread waits, after the transfer ends, for the decoder to use up its
    /// bytes before judging the end (a short HTML reply is "not FLAC"): a right verdict on a slow
    /// decoder vs. how long a reconnect can be held up.
    static let decoderWaitMs = 30_000

    // MARK: Sniffing and joining

    /// Bytes looked at to tell native from Ogg FLAC from anything else: a surer verdict vs.
    /// waiting for more of a quiet native mount.
    static let sniffBytes = StreamSniffer.wantedBytes
    /// How long an inconclusive start may take to show its frames: a quiet native mount joined
    /// mid-stream is recognised vs. how long a page that is not FLAC takes to be reported.
    static let sniffWaitMs = 3000
    /// Most read from the ring at once (a read holds only bytes that arrived together, so a
    /// unit's arrival is when its last byte came, backlog or not).
    static let oggReadBytes = 16 * 1024
    /// Newest audio of Icecast's connect burst that is decoded and played: how far behind the
    /// house this computer plays vs. enough to ride out the gaps between Ogg pages and fill the
    /// sound server's prebuffer at once.
    static let joinKeepMs = 500
    /// While joining, no byte for this long means the burst is over: a quick first sound vs.
    /// ending the join in a hiccup of the burst itself.
    static let burstGapMs = 30
    /// The join ends at the latest this long after the first byte: playing soon on a server that
    /// never pauses its burst vs. dropping more of it.
    static let joinCapMs = 5000

    // MARK: Switching connections (make before break)

    /// How long a new connection may take to reach the sample that plays before it is played as a
    /// fresh one: a slow connect still switched seamlessly vs. how long the old route is used
    /// after it was left (~0.85 s to connect on the rig).
    static let switchWaitMs = 6000
    /// The new connection's bytes held while it lines up: ~40 s of the rig's stream vs. memory.
    static let switchHoldBytes = 1024 * 1024
    /// Positions further apart are another stream (an encoder restarted): longer than any burst
    /// or lag vs. waiting out `switchWaitMs` in vain.
    static let switchApartSeconds: Int64 = 60

    // MARK: Pause

    /// How long a pause keeps the connection (`keep_warm`), read and decoded unheard, so that
    /// Play is heard at once instead of after a new connection (~0.7 s on the rig): short pauses
    /// resume at once vs. ~25 KB/s on the network, a listener slot at Icecast and ~3 ms of CPU a
    /// second while nothing is heard.
    static let keepWarmSeconds = 30

    // MARK: Sound output

    /// The sound server's buffer: riding out a busy CPU vs. how late local volume is heard (a
    /// pause is not delayed by it: the stream is flushed).
    static let sinkBufferMs = 600
    /// The least room the sound server waits for before it asks for more, and so the least
    /// written at a time: fewer wake-ups vs. the sink's own latency, which PulseAudio sets to
    /// (sinkBufferMs − 2 × pieceMs) / 2.
    static let pieceMs = 100
    /// How often, while playing, the sound server is asked for a timing report (the heard delay
    /// extrapolates between): a change of the sink's latency shows sooner vs. a round trip each
    /// time.
    static let timingEveryMs = 1000
    /// Opening the sound output gives up after this: a sound server that hangs is reported vs. a
    /// slow one refused.
    static let sinkOpenTimeoutMs = 5000

    // MARK: The cushion and the way back towards live (`Playout`)

    /// How far above its target the input's backlog may be before audio is dropped (digital
    /// silence only, `Playout.Drops`): jitter drops nothing vs. how close to live the way back
    /// ends (half of it is left).
    static let cushionMarginMs = 300
    /// How long every frame must have waited before a drop starts: a busy CPU's moment or one
    /// late page drops nothing vs. how soon after a burst the way back may start.
    static let cushionWindowMs = 2000
    /// A fall of the heard delay by more than this at once is told (`StreamEvent.delayFell`):
    /// titles follow a drop within a write vs. a wake-up of the bridge for a smaller move.
    static let delayFallToldMs = 100
    /// The most of a stall's backlog kept as a cushion (`Playout.Target`): stalls up to about
    /// this long are heard once, not every time vs. how far behind the house a bad link leaves us.
    static let cushionCapMs = 2000
    /// Bytes later than the link's usual longest gap by more than this (and than the sound
    /// server's buffer) are a stall, and the cushion grows at the next change (`Playout.Pad`):
    /// a stall ridden out is seen vs. a page a busy server sent late taken for one.
    static let cushionStallSlackMs = 150
    /// A cut before a change (`Playout.Cut`) ends this far past its on-time moment: the new track
    /// may start this much into it vs. the error of that moment (−115…+179 ms on the rig), which
    /// the other way would cut within the old track: a skip.
    static let cushionCutPastMs = 150
    /// A link clean this long lets the cushion go, its backlog dropped where the music allows:
    /// back near live within a minute of the link healing vs. a cushion let go between two
    /// stalls of a link that stalls now and then.
    static let cushionCleanMs = 30_000

    // MARK: Heard delay (`Playout.Delay`)

    /// The output counts as starved (the heard delay grows with the clock) once it has had
    /// nothing new for this long beyond what the sound server held at the last write: between Ogg
    /// pages (~0.42 s) a write's report undercounts what still plays vs. how soon a stall holds
    /// back the changes that follow audio not yet here.
    static let starvedAfterMs = 500
    /// How fast the on-time origin creeps later per ms of arrivals (200 ppm): a server clock up
    /// to that much slower than ours is followed vs. the delay read that much short meanwhile.
    static let originCreep = 0.0002
    /// Weight of each new delay sample: steady against libpulse's interpolation vs. how quickly
    /// a real fall shows (a rise beyond `Playout.Delay.wholeRiseMs`, an underrun, is taken whole).
    static let delaySmoothing = 0.2
}
