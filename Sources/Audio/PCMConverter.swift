/// Decoded FLAC (planar Int32) to what the sound server takes: interleaved little-endian S16, or
/// S32 for anything wider (24-bit is shifted up), scaled by the software volume in fixed point.
/// Stateless; this loop runs for every sample heard.
public struct PCMConverter: Sendable {
    public init() {}

    /// Writes `f` into `pcm`, reusing its storage when the size is unchanged.
    public func convert(_ f: DecodedFrame, volume: Double, into pcm: inout [UInt8]) {
        let count = f.samples * f.format.sinkBytesPerFrame
        if pcm.count != count { pcm = [UInt8](repeating: 0, count: count) }
        pcm.withUnsafeMutableBytes { convert(f, volume: volume, into: $0) }
    }

    /// Writes `f` into `raw` (at least `samples × sinkBytesPerFrame` bytes): the sound server's
    /// own memory, with no copy in between.
    public func convert(_ f: DecodedFrame, volume: Double, into raw: UnsafeMutableRawBufferPointer) {
        let ch = f.format.channels, n = f.samples
        let bps = f.format.sinkBytesPerSample
        precondition(raw.count >= n * ch * bps, "conversion buffer too small")
        let gain = Int64((volume * 65536).rounded())
        let shift = Int64(max(0, (bps == 2 ? 16 : 32) - f.format.bitsPerSample))
        for c in 0..<ch {
            guard let plane = f.planes[c] else { continue }
            if bps == 2 {
                interleave(Int16.self, plane, into: raw, channel: c, of: ch, samples: n, shift: shift, gain: gain)
            } else {
                interleave(Int32.self, plane, into: raw, channel: c, of: ch, samples: n, shift: shift, gain: gain)
            }
        }
    }

    /// Stores through the array's raw bytes with `storeBytes`, which is defined on memory bound
    /// to UInt8; binding that memory to Int16/Int32 instead would be undefined behaviour.
    @inline(__always)
    private func interleave<T: FixedWidthInteger>(_: T.Type, _ plane: UnsafePointer<Int32>,
                                                  into raw: UnsafeMutableRawBufferPointer, channel c: Int,
                                                  of ch: Int, samples n: Int, shift: Int64, gain: Int64) {
        let size = MemoryLayout<T>.size
        var offset = c * size
        let stride = ch * size
        for i in 0..<n {
            var v = Int64(plane[i]) << shift
            if gain != 65536 { v = (v * gain) >> 16 }
            raw.storeBytes(of: T(clamping: v).littleEndian, toByteOffset: offset, as: T.self)
            offset += stride
        }
    }
}

extension PCMConverter {
    /// Decodes a FLAC file through the same decoder and conversion path as the stream player, with
    /// no network and no sound server: what `groove-decode-bench` runs under callgrind to count
    /// instructions repeatably.
    public enum Benchmark {
        public struct Figures: Sendable {
            public var samples = 0
            public var bytesOut = 0
            public var checksum: UInt64 = 0
        }

        public static func run(file bytes: [UInt8], ogg: Bool, volume: Double = 1.0) -> Figures? {
            var figures = Figures()
            var pcm: [UInt8] = []
            let converter = PCMConverter()
            let started = FLACDecoder.decode(bytes, ogg: ogg) { f in
                converter.convert(f, volume: volume, into: &pcm)
                figures.samples += f.samples
                figures.bytesOut += pcm.count
                // Touch the output so the conversion cannot be optimised away.
                figures.checksum = figures.checksum &* 31 &+ UInt64(pcm[pcm.count / 2])
            }
            return started ? figures : nil
        }
    }
}
