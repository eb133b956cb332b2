// libFuzzer target: any bytes as a stream body, through libFLAC (native and Ogg) in the pieces
// the network gives, and each decoded frame through the sample conversion. Corrupt input must end
// in an error or silence, never a crash, a hang or a read outside libFLAC's buffers. Only our code
// is instrumented (Debian's libFLAC is not), so coverage guides the callbacks and the conversion;
// the seed corpus of real captures gives libFLAC real frames to be bit-flipped.
//
// Every input also starts one decoder whose libFLAC init fails: under AddressSanitizer, a decoder
// freed twice on that path is a crash here.
import CFLAC

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let refused = FLACDecoder(container: .native, read: { _ in .end }, frame: { _ in true }, corruption: {},
                              initialise: { _ in FLAC__STREAM_DECODER_INIT_STATUS_INVALID_CALLBACKS })
    precondition(refused == nil, "a decoder whose init failed was returned")
    let input = UnsafeBufferPointer(start: data, count: size)
    for container in [FLACDecoder.Container.native, .ogg] {
        var offset = 0
        var pcm: [UInt8] = []
        var frames = 0
        let converter = PCMConverter()
        guard let decoder = FLACDecoder(
            container: container,
            read: { buffer in
                guard offset < input.count else { return .end }
                // Pieces of varying size, as reads from a socket come.
                let n = min(buffer.count, input.count - offset, 1 + Int(input[offset]) * 37)
                buffer.copyMemory(from: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: input[offset..<(offset + n)])))
                offset += n
                return .bytes(n)
            },
            frame: { f in
                frames += 1
                converter.convert(f, volume: 0.5, into: &pcm)
                precondition(pcm.count == f.samples * f.format.channels * f.format.sinkBytesPerSample,
                             "converted frame has the wrong size")
                return frames < 10_000
            },
            corruption: {})
        else { continue }
        _ = decoder.run()
    }
    return 0
}
