// The fuzz build (scripts/fuzz) compiles this file with Support's Saturating.swift into one module.
#if canImport(Support)
import Support
#endif

// The audio path's two clocks as types, so that one cannot stand for the other, and the
// sample-rate conversions in one place:
// - `Instant`: a moment on the monotonic clock (bytes arrived, audio heard, a change would have
//   arrived had every page come on time);
// - `StreamPosition`: how far into one connection's audio (from its first sample, decoded or
//   skipped);
// - a duration between two of either is `Int` milliseconds, named `…Ms`; crossing from one clock
//   to the other takes the on-time origin (`Playout.Delay.onTime(at:)`).

/// A moment on the monotonic clock, in milliseconds (`monotonicMs()`).
public struct Instant: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var ms: Int

    public init(ms: Int) { self.ms = ms }

    public static func < (a: Instant, b: Instant) -> Bool { a.ms < b.ms }
    /// The milliseconds from `b` to `a` (saturating).
    public static func - (a: Instant, b: Instant) -> Int { a.ms.subtracting(saturating: b.ms) }
    public static func + (a: Instant, ms: Int) -> Instant { Instant(ms: a.ms.adding(saturating: ms)) }
    public static func - (a: Instant, ms: Int) -> Instant { Instant(ms: a.ms.subtracting(saturating: ms)) }

    public var description: String { "\(ms) ms" }
}

/// How far into one connection's audio, in milliseconds (fractions kept: frames are not whole ms).
public struct StreamPosition: Comparable, Hashable, Sendable {
    public var ms: Double

    public init(ms: Double) { self.ms = ms }

    public static let start = StreamPosition(ms: 0)
    public static func < (a: StreamPosition, b: StreamPosition) -> Bool { a.ms < b.ms }
    /// `samples` at `rate` further on (a rate of 0 moves nothing).
    public func advanced(samples: Int, rate: Int) -> StreamPosition {
        rate > 0 ? StreamPosition(ms: ms + Double(samples) * 1000 / Double(rate)) : self
    }
}

/// The sample format of decoded audio, from each frame's own header (a stream joined mid-way
/// has no STREAMINFO, so the frame is the only source), and its conversions between samples,
/// milliseconds and the sound server's bytes.
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
    public var sinkBytesPerFrame: Int { sinkBytesPerSample * max(1, channels) }

    public func milliseconds(frames: Int) -> Int { sampleRate > 0 ? frames.multiplied(saturating: 1000) / sampleRate : 0 }
    /// The length of `bytes` of the sink's samples.
    public func milliseconds(bytes: Int) -> Int { milliseconds(frames: bytes / sinkBytesPerFrame) }
    /// Whole frames' worth of sink bytes in `ms` milliseconds (at least one frame).
    public func sinkBytes(milliseconds ms: Int) -> Int {
        max(1, sampleRate.multiplied(saturating: ms) / 1000).multiplied(saturating: sinkBytesPerFrame)
    }
    /// Samples in `ms` milliseconds.
    public func samples(milliseconds ms: Int) -> Int64 { Int64(ms) * Int64(sampleRate) / 1000 }

    public var description: String {
        "FLAC \(bitsPerSample)-bit \(sampleRate) Hz \(channels == 1 ? "mono" : channels == 2 ? "stereo" : "\(channels) ch")"
    }
}
