// libFuzzer target: any bytes as a stream body, cut into units as the player cuts them (native
// and Ogg), through libFLAC, and each decoded frame through the sample conversion. Corrupt input
// must end in an error or silence, never a crash, a hang or a read outside libFLAC's buffers.
// Only our code is instrumented (Debian's libFLAC is not), so coverage guides the reader, the
// callbacks and the conversion; the seed corpus of real captures gives libFLAC real frames to be
// bit-flipped.
//
// Every input also starts one decoder whose libFLAC init fails: under AddressSanitizer, a decoder
// freed twice on that path is a crash here.
import CFLAC

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let refused = FLACDecoder(corruption: {}, initialise: { _ in FLAC__STREAM_DECODER_INIT_STATUS_INVALID_CALLBACKS })
    precondition(refused == nil, "a decoder whose init failed was returned")
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    for ogg in [false, true] {
        var pcm: [UInt8] = []
        var frames = 0
        let converter = PCMConverter()
        _ = FLACDecoder.decode(input, ogg: ogg) { f in
            frames += 1
            guard frames < 10_000 else { return }
            converter.convert(f, volume: 0.5, into: &pcm)
            precondition(pcm.count == f.samples * f.format.channels * f.format.sinkBytesPerSample,
                         "converted frame has the wrong size")
        }
    }
    return 0
}
