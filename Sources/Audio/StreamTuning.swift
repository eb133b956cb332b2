import Support

/// Every timing and size of the stream path, each with what it trades. `StreamConfig` takes its
/// per-instance defaults from here (tests shorten some); the rest is fixed.
enum StreamTuning {
    // MARK: Reconnecting

    // The transient waits are `RetrySchedule.home`'s (Support), shared with the events socket.

    /// Retry interval for what waiting will not fix (wrong password, not FLAC, untrusted
    /// certificate): picks up a fixed server by itself vs. log lines and requests in vain.
    static let slowRetryMs = RetrySchedule.home.permanentMs
    /// A connection that played this long ends the outage (the next failure starts the quick
    /// retries again): a flaky server is retried quickly again vs. a server that drops every
    /// connection after a few seconds being retried quickly for ever.
    static let playedBeforeResetMs = 10_000

    // MARK: Network

    /// Less than 1 byte/s for this long ends the connection as stalled: an outage noticed sooner
    /// vs. false alarms while a native mount's first bytes take seconds during silence.
    static let stallSeconds = 8
    /// TCP (and TLS) connect limit: a dead host noticed sooner vs. a slow network refused.
    static let connectTimeoutMs = 5000
    /// Bytes between the network and the decoder (about 3 s of 44.1 kHz FLAC): Icecast's whole
    /// connect burst fits without blocking the transfer vs. memory held per connection.
    static let ringBytes = 512 * 1024
    /// How long the network thread waits, after the transfer ends, for the decoder to use up its
    /// bytes before judging how the connection ended (a short HTML reply is "not FLAC"): a right
    /// verdict on a slow decoder vs. how long a reconnect can be held up.
    static let decoderWaitMs = 30_000

    // MARK: Sniffing and joining

    /// Bytes looked at to tell native from Ogg FLAC from anything else (kept in StreamSniffer,
    /// which is fuzzed on its own): a surer verdict vs. waiting for more of a quiet native mount.
    static let sniffBytes = StreamSniffer.wantedBytes
    /// How long an inconclusive start may take to show its frames: a quiet native mount joined
    /// mid-stream is recognised vs. how long a page that is not FLAC takes to be reported.
    static let sniffWaitMs = 3000
    /// Most read from the ring at once when splitting Ogg pages (a read holds only bytes that
    /// arrived together, so a page's arrival is when its last byte came, backlog or not).
    static let oggReadBytes = 16 * 1024
    /// Newest decoded audio of Icecast's connect burst that is kept and played; the rest is
    /// dropped: how far behind the house this computer plays vs. enough to ride out the gaps
    /// between Ogg pages and network jitter and fill PulseSink's prebuffer at once.
    static let joinKeepMs = 500
    /// While joining, a read that waits this long for bytes means the burst is over: a quick
    /// first sound vs. ending the join in a hiccup of the burst itself.
    static let burstGapMs = 30
    /// The join ends at the latest this long after the first byte, burst over or not: playing
    /// soon on a server that never pauses its burst vs. dropping more of it.
    static let joinCapMs = 5000

    // MARK: Switching connections (make before break)

    /// How long after a switch is asked for (a changed URL, another route) the new connection may
    /// take to connect and reach the sample that plays before it is played as a fresh connection,
    /// as a reconnect would: a slow connect still switched seamlessly vs. how long the old route
    /// is used after it was left (~0.85 s to connect on the rig).
    static let switchWaitMs = 6000
    /// The new connection's bytes held while it is lined up (Icecast's connect burst and what
    /// follows until it reaches what plays): ~40 s of the rig's stream vs. memory.
    static let switchHoldBytes = 1024 * 1024
    /// Positions further apart than this are another stream (an encoder restarted), not worth
    /// waiting for: longer than any burst or lag vs. waiting out `switchWaitMs` in vain.
    static let switchApartSeconds: Int64 = 60

    // MARK: Pause

    /// How long a pause here keeps the connection (`keep_warm`), read and decoded unheard, so
    /// that Play is heard at once instead of after a new connection (~0.7 s on the rig, most of
    /// it Icecast adding a listener): the short pauses (a word with someone, a call answered
    /// in a minute) resume at once vs. the stream's bitrate (~25 KB/s) on the network, a
    /// listener slot at Icecast and ~3 ms of CPU per second while nothing is heard.
    static let keepWarmSeconds = 30

    // MARK: Sound output

    /// The sound server's buffer: riding out a busy CPU vs. how late local volume is heard
    /// (a pause is not delayed by it: the sink is flushed).
    static let sinkBufferMs = 600
    /// The least room the sound server waits for before it asks for more, and so the least the
    /// decoder writes at a time: fewer wake-ups of this process vs. the sink's own latency, which
    /// PulseAudio sets to (sinkBufferMs − 2 × pieceMs) / 2. A pause does not wait for it (the
    /// stream is corked and flushed at once).
    static let pieceMs = 100
    /// How often, while playing, the sound server is asked where its read index and the sink's
    /// latency are (the heard delay extrapolates between): a change of the sink's latency (another
    /// client asking for less) shows sooner vs. a round trip to the server each time.
    static let timingEveryMs = 1000
    /// Opening the sound output (connect, then the stream) gives up after this: a sound server
    /// that hangs is reported vs. a slow one refused.
    static let sinkOpenTimeoutMs = 5000

    // MARK: The way back towards live

    /// How long above its target the input's backlog (how long a decoded frame's bytes waited)
    /// may be before audio is dropped (in digital silence only, `CushionPolicy`): jitter never
    /// drops anything vs. how close to live the way back ends (half of it is left).
    static let cushionMarginMs = 300
    /// How long every frame must have waited in the input before a drop starts: a busy CPU's
    /// moment or one late page drops nothing vs. how soon after a burst the way back may start.
    static let cushionWindowMs = 2000
    /// A fall of the heard delay by more than this at once (a drop) is told to the bridge at
    /// once (`StreamPlayer.onDelayFall`): titles held for the delay follow the drop within a
    /// write piece vs. a wake-up of the bridge for a smaller move, which its next input or
    /// deadline also catches.
    static let delayFallToldMs = 100
    /// The most a stall's backlog is kept as a cushion against the next (`CushionTarget`):
    /// stalls up to about this long are heard once, not every time vs. how far behind the house
    /// a bad link leaves this computer.
    static let cushionCapMs = 2000
    /// Bytes later than the link's usual longest gap between reads by more than this (and later
    /// than the sound server's buffer) are a stall (`CushionTarget`), and the cushion grows at
    /// the next track change (`ChangePad`): a stall that the sound server's buffer rode out is
    /// seen, so that the next one, a page later, is ridden out too vs. a page a busy server sent
    /// late taken for a stall (the next track then starts a cushion later, for 30 s).
    static let cushionStallSlackMs = 150
    /// A cut before a track change (`ChangeCut`) ends this far past the change's on-time moment:
    /// the new track may start this much into it (and its title come as much before it) vs. the
    /// error of that moment (the server's delay learned from the music: −115…+179 ms on the
    /// rig) that, the other way, would cut within the old track and play its true end after the
    /// cut: a skip.
    static let cushionCutPastMs = 150
    /// A link clean this long (no stall seen in the arrivals, no underrun) lets
    /// the cushion go, and its backlog is dropped where the music allows: back near live within
    /// a minute of the link healing, at the next track change or silence vs. a cushion let go
    /// between two stalls of a link that stalls now and then.
    static let cushionCleanMs = 30_000

    // MARK: Heard delay

    /// The output counts as starved (a stall: the heard delay grows with the clock) once it has
    /// had nothing new for this long beyond what the sound server held at the last write: Ogg
    /// pages come every ~0.42 s, and between them a write's report undercounts what still plays
    /// (counting that as a stall showed titles 100–240 ms late) vs. how soon a stall holds back
    /// the changes that follow audio not yet here.
    static let starvedAfterMs = 500

    /// How fast (per ms of arrivals) the on-time origin creeps later, 200 ppm: a server clock up
    /// to that much slower than ours is followed vs. the delay read that much short for as long
    /// as no page comes on time.
    static let originCreep = 0.0002
    /// Weight of each new delay sample: steady against libpulse's interpolation and the 100 ms
    /// pieces vs. how quickly a real fall shows (a rise beyond `HeardDelayEstimator.wholeRiseMs`, an underrun, is
    /// taken whole).
    static let delaySmoothing = 0.2
}
