import CFLAC

/// One decoded FLAC frame, valid only during the call that hands it over.
public struct DecodedFrame {
    public let format: AudioFormat
    public let samples: Int
    /// `channels` pointers to `samples` Int32 each (libFLAC's planar buffers).
    public let planes: UnsafePointer<UnsafePointer<Int32>?>
    /// The stream position of the frame's first sample, from its header: the same audio has the
    /// same number on every connection to the mount.
    public var firstSample: Int64 = 0

    /// Digital silence: no sample of any channel beyond ±1 step of 16 bits (−90 dBFS) at 16 bits
    /// and deeper, none but 0 below.
    var isDigitalSilence: Bool {
        let bits = format.bitsPerSample
        guard (1...32).contains(bits), samples > 0 else { return false }
        let limit: Int32 = bits >= 16 ? 1 << Int32(bits - 16) : 0
        for c in 0..<format.channels {
            guard let plane = planes[c] else { return false }
            for i in 0..<samples where plane[i] > limit || plane[i] < -limit { return false }
        }
        return true
    }
}

/// Decode, its second half: libFLAC's stream decoder, fed whole units (`FrameReader`) and never
/// waiting for bytes: it reads only what `step`'s `supply` hands it, and `step` is called only
/// when there is something to decode (a unit, or what libFLAC already holds). No seek or length
/// callbacks (a live stream); a tell callback, so that what libFLAC holds unread is known. Native
/// FLAC only: Ogg is unwrapped into native units before. The only user of libFLAC. Not
/// thread-safe: the decoder thread owns it.
final class FLACDecoder {
    enum Outcome: Equatable {
        /// A frame went to `frame`.
        case frame
        /// A metadata block was read, or what was held led nowhere yet.
        case other
        /// libFLAC wanted more than there was: what it held is dropped, it starts afresh at the
        /// next frame header.
        case starved
        /// libFLAC gave up on the stream (memory): a new decoder is needed.
        case failed(String)
    }

    private let decoder: UnsafeMutablePointer<FLAC__StreamDecoder>
    private var supply: (UnsafeMutableRawBufferPointer) -> Int = { _ in 0 }
    private var frame: (DecodedFrame) -> Void = { _ in }
    private let corruption: () -> Void
    /// Bytes handed to libFLAC since it last started afresh (the tell callback's answer).
    private var handed: UInt64 = 0
    private var wrote = false
    private var starved = false

    /// `corruption`: libFLAC lost sync or a frame failed its CRC (it outputs that frame as
    /// silence). `initialise` stands in for libFLAC's own init in a test of the failure path.
    init?(corruption: @escaping () -> Void,
          initialise: ((UnsafeMutablePointer<FLAC__StreamDecoder>) -> FLAC__StreamDecoderInitStatus)? = nil) {
        guard let d = FLAC__stream_decoder_new() else { return nil }
        decoder = d
        self.corruption = corruption
        // Bit-exactness is checked by the frame CRCs; MD5 needs the whole stream.
        FLAC__stream_decoder_set_md5_checking(d, 0)
        let me = Unmanaged.passUnretained(self).toOpaque()
        let status = initialise?(d)
            ?? FLAC__stream_decoder_init_stream(d, flacRead, nil, flacTell, nil, nil, flacWrite, nil, flacError, me)
        // Every stored property is set, so Swift runs `deinit` even when this initialiser fails:
        // `deinit` alone deletes the decoder.
        guard status == FLAC__STREAM_DECODER_INIT_STATUS_OK else { return nil }
    }

    /// The only owner of the C decoder. FLAC__stream_decoder_delete finishes it first, and
    /// finishing one whose init failed (still uninitialised) does nothing.
    deinit { FLAC__stream_decoder_delete(decoder) }

    /// Bytes handed to libFLAC and not yet decoded: a step can be taken on them alone.
    var holdsBytes: Bool {
        var position: UInt64 = 0
        guard FLAC__stream_decoder_get_decode_position(decoder, &position) != 0 else { return false }
        return position < handed
    }

    /// One frame or metadata block: libFLAC reads through `supply` (bytes copied into the buffer
    /// given, 0 when there are none) and hands a decoded frame to `frame`.
    func step(supply: @escaping (UnsafeMutableRawBufferPointer) -> Int, frame: @escaping (DecodedFrame) -> Void) -> Outcome {
        self.supply = supply
        self.frame = frame
        defer {
            self.supply = { _ in 0 }
            self.frame = { _ in }
        }
        wrote = false
        starved = false
        let ok = FLAC__stream_decoder_process_single(decoder) != 0
        let state = FLAC__stream_decoder_get_state(decoder)
        if starved || state == FLAC__STREAM_DECODER_END_OF_STREAM || state == FLAC__STREAM_DECODER_ABORTED
            || (!ok && (state == FLAC__STREAM_DECODER_OGG_ERROR || state == FLAC__STREAM_DECODER_SEEK_ERROR)) {
            restart(flushOnly: true)
            return wrote ? .frame : .starved
        }
        if !ok { return .failed(FLACDecoder.name(of: state)) }
        return wrote ? .frame : .other
    }

    /// A new logical stream: its metadata comes next.
    func startAfresh() { restart(flushOnly: false) }

    private func restart(flushOnly: Bool) {
        _ = flushOnly ? FLAC__stream_decoder_flush(decoder) : FLAC__stream_decoder_reset(decoder)
        handed = 0
    }

    fileprivate func onRead(_ buffer: UnsafeMutablePointer<UInt8>, _ bytes: UnsafeMutablePointer<Int>) -> FLAC__StreamDecoderReadStatus {
        let n = supply(UnsafeMutableRawBufferPointer(start: buffer, count: bytes.pointee))
        bytes.pointee = n
        guard n > 0 else {
            // Never "continue" with nothing: libFLAC would ask again at once, for ever.
            starved = true
            return FLAC__STREAM_DECODER_READ_STATUS_END_OF_STREAM
        }
        handed &+= UInt64(n)
        return FLAC__STREAM_DECODER_READ_STATUS_CONTINUE
    }

    fileprivate func onTell(_ offset: UnsafeMutablePointer<UInt64>) -> FLAC__StreamDecoderTellStatus {
        offset.pointee = handed
        return FLAC__STREAM_DECODER_TELL_STATUS_OK
    }

    fileprivate func onWrite(_ f: UnsafePointer<FLAC__Frame>, _ planes: UnsafePointer<UnsafePointer<Int32>?>) -> FLAC__StreamDecoderWriteStatus {
        let h = f.pointee.header
        let format = AudioFormat(sampleRate: Int(h.sample_rate), channels: Int(h.channels), bitsPerSample: Int(h.bits_per_sample))
        // libFLAC turns a frame number into a sample number where it can; where it cannot (no
        // STREAMINFO) the block size is the stream's own (RFC 9639 §9.1.5).
        let first = h.number_type == FLAC__FRAME_NUMBER_TYPE_SAMPLE_NUMBER
            ? h.number.sample_number : UInt64(h.number.frame_number) &* UInt64(h.blocksize)
        wrote = true
        frame(DecodedFrame(format: format, samples: Int(h.blocksize), planes: planes, firstSample: Int64(clamping: first)))
        return FLAC__STREAM_DECODER_WRITE_STATUS_CONTINUE
    }

    // LOST_SYNC is expected after corrupt bytes: libFLAC resyncs on the next frame header by
    // itself; a frame whose CRC fails is output as silence.
    fileprivate func onError(_ status: FLAC__StreamDecoderErrorStatus) { corruption() }
}

extension FLACDecoder {
    /// libFLAC's input: units in order, read one after the other (a frame a false header cut in
    /// two goes on in the next); a new logical stream stops the reading until libFLAC starts afresh.
    struct Input {
        /// Units to read, from `head` on.
        private var units: [FrameReader.Unit] = []
        private var head = 0
        private var unit: [UInt8] = []
        private var offset = 0
        /// When the bytes last read arrived: the frame libFLAC decodes from them arrived no earlier.
        private(set) var arrival = Instant(ms: 0)

        init(_ units: [FrameReader.Unit] = []) { self.units = units }

        mutating func append(_ u: FrameReader.Unit) { units.append(u) }
        mutating func append<S: Sequence>(contentsOf more: S) where S.Element == FrameReader.Unit { units.append(contentsOf: more) }

        private var first: FrameReader.Unit? { head < units.count ? units[head] : nil }
        private mutating func dropFirst() {
            head += 1
            // What was read goes once it is half of what is held (never all of it at once).
            if head >= 32 || head == units.count, head * 2 >= units.count {
                units.removeFirst(head)
                head = 0
            }
        }

        /// Everything given has been read.
        var isEmpty: Bool { offset >= unit.count && first == nil }
        /// Bytes to read before the next new stream.
        var hasBytes: Bool { offset < unit.count || first.map { $0.kind != .newStream } == true }
        fileprivate var atNewStream: Bool { offset >= unit.count && first?.kind == .newStream }
        fileprivate mutating func dropNewStream() { dropFirst() }

        /// libFLAC's read: what is left of the unit under way, then the next; 0 when there is
        /// nothing more, or a new stream comes first.
        mutating func supply(_ buf: UnsafeMutableRawBufferPointer) -> Int {
            while offset >= unit.count {
                guard let next = first, next.kind != .newStream else { return 0 }
                dropFirst()
                (unit, offset, arrival) = (next.bytes, 0, next.arrival)
            }
            let n = min(buf.count, unit.count - offset)
            unit.withUnsafeBytes { buf.baseAddress!.copyMemory(from: $0.baseAddress! + offset, byteCount: n) }
            offset += n
            return n
        }
    }
}

extension FLACDecoder {
    /// One step of libFLAC on `input` (at a new logical stream, it first starts afresh); a frame
    /// goes to `frame` with when its bytes arrived. Nil when there is nothing to decode.
    func step(_ input: inout FLACDecoder.Input, frame: (DecodedFrame, Instant) -> Void) -> Outcome? {
        if input.atNewStream && !holdsBytes {
            input.dropNewStream()
            startAfresh()
            return .other
        }
        guard holdsBytes || input.hasBytes else { return nil }
        return withUnsafeMutablePointer(to: &input) { p in
            withoutActuallyEscaping(frame) { frame in step(supply: { p.pointee.supply($0) }, frame: { frame($0, p.pointee.arrival) }) }
        }
    }

    /// Decodes `bytes` (a whole stream, or any part of one) the way the player does — units cut
    /// by `FrameReader`, handed to libFLAC one after the other — and hands each frame to `frame`.
    /// False when libFLAC cannot start.
    static func decode(_ bytes: [UInt8], ogg: Bool, corruption: @escaping () -> Void = {}, frame: (DecodedFrame) -> Void) -> Bool {
        guard let decoder = FLACDecoder(corruption: corruption) else { return false }
        var reader = FrameReader(ogg: ogg)
        reader.feed(bytes, arrival: Instant(ms: 0))
        reader.finish()
        var input = FLACDecoder.Input()
        while let u = reader.next() { input.append(u) }
        while let outcome = decoder.step(&input, frame: { f, _ in frame(f) }) {
            if case .failed = outcome { break }
        }
        return true
    }
}

private func decoderOf(_ client: UnsafeMutableRawPointer?) -> FLACDecoder {
    Unmanaged<FLACDecoder>.fromOpaque(client!).takeUnretainedValue()
}

private let flacRead: FLAC__StreamDecoderReadCallback = { _, buffer, bytes, client in decoderOf(client).onRead(buffer!, bytes!) }
private let flacTell: FLAC__StreamDecoderTellCallback = { _, offset, client in decoderOf(client).onTell(offset!) }
private let flacWrite: FLAC__StreamDecoderWriteCallback = { _, frame, buffer, client in decoderOf(client).onWrite(frame!, buffer!) }
private let flacError: FLAC__StreamDecoderErrorCallback = { _, status, client in decoderOf(client).onError(status) }

extension FLACDecoder {
    /// libFLAC's state names. Its own table (FLAC__StreamDecoderStateString) is an incomplete C
    /// array that Swift cannot index safely, so the names are spelled out here.
    static func name(of state: FLAC__StreamDecoderState) -> String {
        switch state {
        case FLAC__STREAM_DECODER_SEARCH_FOR_METADATA: return "searching for metadata"
        case FLAC__STREAM_DECODER_READ_METADATA: return "reading metadata"
        case FLAC__STREAM_DECODER_SEARCH_FOR_FRAME_SYNC: return "searching for frame sync"
        case FLAC__STREAM_DECODER_READ_FRAME: return "reading a frame"
        case FLAC__STREAM_DECODER_END_OF_STREAM: return "end of stream"
        case FLAC__STREAM_DECODER_OGG_ERROR: return "Ogg error"
        case FLAC__STREAM_DECODER_SEEK_ERROR: return "seek error"
        case FLAC__STREAM_DECODER_ABORTED: return "aborted"
        case FLAC__STREAM_DECODER_MEMORY_ALLOCATION_ERROR: return "out of memory"
        case FLAC__STREAM_DECODER_UNINITIALIZED: return "uninitialized"
        default: return "state \(state.rawValue)"
        }
    }
}
