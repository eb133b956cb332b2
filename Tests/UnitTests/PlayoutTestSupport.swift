@testable import Audio

// In the tests only: a moment written as its milliseconds (`c.announced([10_000])`), so that the
// tables read as numbers. The program itself writes `Instant(ms:)`.
extension Instant: ExpressibleByIntegerLiteral {
    public init(integerLiteral ms: Int) { self.init(ms: ms) }
}

/// A frame of a tone for the playout's tests: `samples` at 1 kHz, mono, 16-bit, not silent.
let toneFormat = AudioFormat(sampleRate: 1000, channels: 1, bitsPerSample: 16)
