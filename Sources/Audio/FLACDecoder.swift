import CFLAC

/// The sample format of decoded audio, from each frame's own header (a stream joined mid-way
/// has no STREAMINFO, so the frame is the only source).
public struct AudioFormat: Equatable, Sendable, CustomStringConvertible {
    public var sampleRate: Int
    public var channels: Int
    public var bitsPerSample: Int

    public init(sampleRate: Int, channels: Int, bitsPerSample: Int) {
        self.sampleRate = sampleRate
        self.channels = channels
        self.bitsPerSample = bitsPerSample
    }

    /// Bytes per sample in the sink: 16-bit stays 16, anything wider is sent as 32-bit.
    public var sinkBytesPerSample: Int { bitsPerSample <= 16 ? 2 : 4 }
    public var sinkBytesPerFrame: Int { sinkBytesPerSample * channels }

    public func milliseconds(frames: Int) -> Int { sampleRate > 0 ? frames * 1000 / sampleRate : 0 }
    /// The length of `bytes` of the sink's samples.
    func milliseconds(bytes: Int) -> Int { milliseconds(frames: bytes / max(1, sinkBytesPerFrame)) }
    /// Whole frames' worth of sink bytes in `ms` milliseconds (at least one frame).
    public func sinkBytes(milliseconds ms: Int) -> Int { max(1, sampleRate * ms / 1000) * sinkBytesPerFrame }

    public var description: String { "FLAC \(bitsPerSample)-bit \(sampleRate) Hz \(channels == 1 ? "mono" : channels == 2 ? "stereo" : "\(channels) ch")" }
}

/// One decoded FLAC frame, valid only during the callback.
public struct DecodedFrame {
    public let format: AudioFormat
    public let samples: Int
    /// `channels` pointers to `samples` Int32 each (libFLAC's planar buffers).
    public let planes: UnsafePointer<UnsafePointer<Int32>?>
    /// The stream position of the frame's first sample, from its header: the same audio has the
    /// same number on every connection to the mount (a switch lines connections up by it).
    public var firstSample: Int64 = 0
}

public enum DecoderInput {
    case bytes(Int)
    case end
}

/// libFLAC's stream decoder through read callbacks only (no seek/tell/length: it is a live
/// stream). The only user of libFLAC. Not thread-safe: the decoder thread owns it.
final class FLACDecoder {
    enum Container { case native, ogg }

    enum Outcome: Equatable {
        /// The input ended (`read` returned `.end`).
        case ended
        /// The frame consumer asked to stop.
        case stopped
        /// libFLAC gave up (memory, or an unrecoverable state).
        case failed(String)
    }

    private let decoder: UnsafeMutablePointer<FLAC__StreamDecoder>
    private let read: (UnsafeMutableRawBufferPointer) -> DecoderInput
    private let frame: (DecodedFrame) -> Bool
    private let corruption: () -> Void
    private var consumerStopped = false

    /// `initialise` stands in for libFLAC's own init in a test of the failure path (nil: libFLAC's).
    init?(container: Container, read: @escaping (UnsafeMutableRawBufferPointer) -> DecoderInput,
          frame: @escaping (DecodedFrame) -> Bool, corruption: @escaping () -> Void,
          initialise: ((UnsafeMutablePointer<FLAC__StreamDecoder>) -> FLAC__StreamDecoderInitStatus)? = nil)
    {
        guard let d = FLAC__stream_decoder_new() else { return nil }
        decoder = d
        self.read = read
        self.frame = frame
        self.corruption = corruption
        // Bit-exactness is checked by the frame CRCs; MD5 needs the whole stream, which a live
        // stream never has.
        FLAC__stream_decoder_set_md5_checking(d, 0)
        let me = Unmanaged.passUnretained(self).toOpaque()
        let status: FLAC__StreamDecoderInitStatus
        switch container {
        case _ where initialise != nil:
            status = initialise!(d)
        case .native:
            status = FLAC__stream_decoder_init_stream(d, flacRead, nil, nil, nil, nil, flacWrite, nil, flacError, me)
        case .ogg:
            status = FLAC__stream_decoder_init_ogg_stream(d, flacRead, nil, nil, nil, nil, flacWrite, nil, flacError, me)
        }
        // Every stored property is set, so Swift runs `deinit` even when this initialiser fails:
        // `deinit` alone deletes the decoder.
        guard status == FLAC__STREAM_DECODER_INIT_STATUS_OK else { return nil }
    }

    /// The only owner of the C decoder. FLAC__stream_decoder_delete finishes it first, and
    /// finishing one whose init failed (still uninitialised) does nothing.
    deinit { FLAC__stream_decoder_delete(decoder) }

    /// Decodes until the input ends or the consumer stops.
    func run() -> Outcome {
        while true {
            let ok = FLAC__stream_decoder_process_single(decoder) != 0
            if consumerStopped { return .stopped }
            let state = FLAC__stream_decoder_get_state(decoder)
            if state == FLAC__STREAM_DECODER_END_OF_STREAM || state == FLAC__STREAM_DECODER_ABORTED { return .ended }
            if !ok {
                if state == FLAC__STREAM_DECODER_OGG_ERROR || state == FLAC__STREAM_DECODER_SEEK_ERROR {
                    // Recoverable for a live stream: start over on the following bytes.
                    _ = FLAC__stream_decoder_flush(decoder)
                    continue
                }
                return .failed(FLACDecoder.name(of: state))
            }
        }
    }

    fileprivate func onRead(_ buffer: UnsafeMutablePointer<UInt8>, _ bytes: UnsafeMutablePointer<Int>) -> FLAC__StreamDecoderReadStatus {
        switch read(UnsafeMutableRawBufferPointer(start: buffer, count: bytes.pointee)) {
        case .bytes(let n):
            bytes.pointee = n
            return FLAC__STREAM_DECODER_READ_STATUS_CONTINUE
        case .end:
            bytes.pointee = 0
            return FLAC__STREAM_DECODER_READ_STATUS_END_OF_STREAM
        }
    }

    fileprivate func onWrite(_ f: UnsafePointer<FLAC__Frame>, _ planes: UnsafePointer<UnsafePointer<Int32>?>) -> FLAC__StreamDecoderWriteStatus {
        let h = f.pointee.header
        let format = AudioFormat(sampleRate: Int(h.sample_rate), channels: Int(h.channels), bitsPerSample: Int(h.bits_per_sample))
        // libFLAC turns a frame number into a sample number where it can; where it cannot (no
        // STREAMINFO) the block size is the stream's own (RFC 9639 §9.1.5).
        let first = h.number_type == FLAC__FRAME_NUMBER_TYPE_SAMPLE_NUMBER
            ? h.number.sample_number : UInt64(h.number.frame_number) &* UInt64(h.blocksize)
        let decoded = DecodedFrame(format: format, samples: Int(h.blocksize), planes: planes,
                                   firstSample: Int64(clamping: first))
        guard frame(decoded) else {
            consumerStopped = true
            return FLAC__STREAM_DECODER_WRITE_STATUS_ABORT
        }
        return FLAC__STREAM_DECODER_WRITE_STATUS_CONTINUE
    }

    fileprivate func onError(_ status: FLAC__StreamDecoderErrorStatus) {
        // LOST_SYNC is expected when joining mid-stream or after corrupt bytes: libFLAC
        // resyncs on the next frame header by itself.
        // A frame whose CRC fails is output as silence by libFLAC.
        _ = status
        corruption()
    }
}

private func decoderOf(_ client: UnsafeMutableRawPointer?) -> FLACDecoder {
    Unmanaged<FLACDecoder>.fromOpaque(client!).takeUnretainedValue()
}

private let flacRead: FLAC__StreamDecoderReadCallback = { _, buffer, bytes, client in
    decoderOf(client).onRead(buffer!, bytes!)
}

private let flacWrite: FLAC__StreamDecoderWriteCallback = { _, frame, buffer, client in
    decoderOf(client).onWrite(frame!, buffer!)
}

private let flacError: FLAC__StreamDecoderErrorCallback = { _, status, client in
    decoderOf(client).onError(status)
}

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
