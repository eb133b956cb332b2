import Glibc

/// Finds where one track gives way to the next in decoded audio, near where it is expected.
/// Pure: samples and positions are inputs. On the decoder thread.
///
/// Each 10 ms block of the mono mix keeps two numbers, from one pair of neighbouring samples in
/// four: its level (dBFS) and its brightness, the RMS frequency as log2 of √(Σ(Δx)² / Σx²),
/// which moves smoothly when two sounds overlap (a crossfade) and jumps when one sound replaces
/// another. The last few seconds of blocks are kept with their stream positions. A boundary
/// between blocks scores, against the 250 ms either side of it, the larger of: a jump in level,
/// a jump in brightness (audible blocks only), and a fall to near-silence. Each is a difference
/// of means over the spread within the two sides, so a steady sound or a slow change scores low
/// whatever its loudness, a sudden change between two steady sounds scores high, and a click
/// where a track is cut counts for nothing.
///
/// A boundary is accepted only when it is clear: its score is at least `floor`, and at least
/// `ratio` times that of any boundary more than a side away from it in the window. Gapless
/// continuations, crossfades, silence on both sides and steady noise have no such candidate;
/// a sudden pause in the music near the change makes two, and neither is taken.
struct BoundaryDetector {
    struct Tuning {
        /// Blocks either side of a boundary that it is measured against.
        var sideBlocks = 25
        /// The least score accepted (a clean 6 dB step, a clean jump of about a sixth of an
        /// octave, a clean fall of 30 dB).
        var floor: Float = 3
        /// How far the best must stand above any other candidate.
        var ratio: Float = 2
        /// Below this a block is near-silent (no brightness; the bottom of a fall).
        var silentDb: Float = -55
    }

    struct Found: Equatable {
        /// The boundary's stream position.
        var positionMs: Double
        var score: Float
        /// The best score more than a side away from it.
        var runnerUp: Float
    }

    static let blockMs = 10.0
    let tuning: Tuning
    let capacity: Int
    private var level: [Float]
    private var bright: [Float]
    /// Blocks completed since the last restart: block k covers baseMs + k·10 ms onwards.
    private(set) var blocks = 0
    private var baseMs = 0.0
    private var sampleRate = 0
    private var blockSamples = 0
    private var inBlock = 0
    /// Of the block so far: pairs of neighbouring samples taken, Σx² of their first and Σ(Δx)²,
    /// in 16-bit units of the two channels' sum.
    private var pairs = 0
    private var sumSquares: Int64 = 0
    private var sumDiffs: Int64 = 0
    /// One pair of neighbouring samples in every `stride`: the features are averages, and a
    /// quarter of the pairs gives them closely enough at a quarter of the cost.
    static let stride = 4

    /// `keepMs`: how much audio is kept to look through.
    init(keepMs: Int = 8000, tuning: Tuning = Tuning()) {
        self.tuning = tuning
        capacity = max(2 * tuning.sideBlocks + 1, keepMs / Int(Self.blockMs))
        level = [Float](repeating: 0, count: capacity)
        bright = [Float](repeating: 0, count: capacity)
    }

    /// The position where the next sample will be.
    var endMs: Double {
        sampleRate > 0 ? baseMs + Double(blocks) * Self.blockMs + Double(inBlock) * 1000 / Double(sampleRate) : baseMs
    }

    /// The oldest position still kept.
    var startMs: Double { baseMs + Double(max(0, blocks - capacity)) * Self.blockMs }

    /// Forgets what is kept; the next sample is at `atMs`.
    mutating func restart(atMs: Double, sampleRate rate: Int) {
        baseMs = atMs
        blocks = 0
        sampleRate = rate
        blockSamples = max(1, rate / 100)
        inBlock = 0
        pairs = 0
        sumSquares = 0
        sumDiffs = 0
    }

    /// `samples` frames of `channels` planes (the first two are mixed), `bits` deep, at stream
    /// position `atMs`. A jump in position (audio skipped) or a new rate starts afresh.
    mutating func add(planes: UnsafePointer<UnsafePointer<Int32>?>, channels: Int, samples: Int, bits: Int,
                      sampleRate rate: Int, atMs: Double) {
        guard rate > 0, channels > 0, samples > 0, (1...32).contains(bits), let a = planes[0] else { return }
        if rate != sampleRate || abs(atMs - endMs) > Self.blockMs { restart(atMs: atMs, sampleRate: rate) }
        let b = channels > 1 ? (planes[1] ?? a) : a
        // Samples deeper than 16 bits are taken at 16 (the squares' sums stay far inside Int64).
        let shift = Int32(max(0, bits - 16))
        var i = 0
        while i < samples {
            let n = min(samples - i, blockSamples - inBlock)
            var j = i
            while j + 1 < i + n {
                let x0 = Int64((a[j] >> shift) &+ (b[j] >> shift))
                let x1 = Int64((a[j + 1] >> shift) &+ (b[j + 1] >> shift))
                sumSquares &+= x0 &* x0
                sumDiffs &+= (x1 &- x0) &* (x1 &- x0)
                pairs &+= 1
                j += Self.stride
            }
            i += n
            inBlock += n
            if inBlock == blockSamples { closeBlock(bits: min(bits, 16)) }
        }
    }

    /// `bits`: the depth the sums are in.
    private mutating func closeBlock(bits: Int) {
        // Full scale is 2^(bits−1) per channel, twice that for the sum of two.
        let fullScale = Float(sign: .plus, exponent: bits, significand: 1)
        let meanSquare = Float(sumSquares) / Float(max(1, pairs)) / (fullScale * fullScale)
        let slot = blocks % capacity
        level[slot] = max(-100, 10 * log10(meanSquare + 1e-12))
        bright[slot] = 0.5 * log2((Float(sumDiffs) + 1e-3) / (Float(sumSquares) + 1e-3))
        blocks += 1
        inBlock = 0
        pairs = 0
        sumSquares = 0
        sumDiffs = 0
    }

    /// Everything a look at `nearMs` ± `windowMs` needs has been decoded.
    func isReady(nearMs: Double, windowMs: Double) -> Bool {
        endMs >= nearMs + windowMs + Double(tuning.sideBlocks) * Self.blockMs
    }

    /// What a look at `nearMs` ± `windowMs` needs is still kept.
    func covers(nearMs: Double, windowMs: Double) -> Bool {
        blocks > 0 && startMs <= nearMs - windowMs - Double(tuning.sideBlocks) * Self.blockMs
    }

    /// The clear boundary within `windowMs` of `nearMs`, or nil (none clear, or not all kept).
    func find(nearMs: Double, windowMs: Double) -> Found? {
        best(nearMs: nearMs, windowMs: windowMs).flatMap { isClear($0) ? $0 : nil }
    }

    func isClear(_ f: Found) -> Bool { f.score >= tuning.floor && f.score >= tuning.ratio * f.runnerUp }

    /// The best candidate within `windowMs` of `nearMs`, clear or not; nil when not all is kept.
    func best(nearMs: Double, windowMs: Double) -> Found? {
        guard let scores = scores(nearMs: nearMs, windowMs: windowMs),
              let best = scores.indices.max(by: { scores[$0].1 < scores[$1].1 }) else { return nil }
        let (k, score) = scores[best]
        let side = tuning.sideBlocks
        let runnerUp = scores.filter { abs($0.0 - k) > side }.map(\.1).max() ?? 0
        return Found(positionMs: baseMs + Double(k) * Self.blockMs, score: score, runnerUp: runnerUp)
    }

    /// Each candidate block's score (block k: the boundary at its start).
    func scores(nearMs: Double, windowMs: Double) -> [(Int, Float)]? {
        let side = tuning.sideBlocks
        let first = Int(((nearMs - windowMs - baseMs) / Self.blockMs).rounded(.up))
        let last = Int(((nearMs + windowMs - baseMs) / Self.blockMs).rounded(.down))
        guard windowMs >= 0, first - side >= max(0, blocks - capacity), last + side <= blocks else { return nil }
        // The blocks the candidates look at, in order; brightness only where audible.
        let lo = first - side, n = last + side - lo
        var levels = [Float](repeating: 0, count: n), brights = [Float?](repeating: nil, count: n)
        for i in 0..<n {
            levels[i] = level[(lo + i) % capacity]
            if levels[i] > tuning.silentDb { brights[i] = bright[(lo + i) % capacity] }
        }
        let fall = 3
        var out: [(Int, Float)] = []
        out.reserveCapacity(last - first + 1)
        for k in first...max(first, last) where k <= last {
            let i = k - lo
            let lb = Self.spread(levels[(i - side)..<i]), la = Self.spread(levels[i..<(i + side)])
            var score = abs(la.mean - lb.mean) / (la.spread + lb.spread + 1) / 2
            let bb = brights[(i - side)..<i].compactMap { $0 }, ba = brights[i..<(i + side)].compactMap { $0 }
            if bb.count >= side / 2, ba.count >= side / 2 {
                let b = Self.robust(bb[...]), a = Self.robust(ba[...])
                score = max(score, abs(a.mean - b.mean) / (a.spread + b.spread + 0.02) / 2)
            }
            let dip = levels[i..<min(n, i + fall)].reduce(0, +) / Float(fall)
            if dip < tuning.silentDb {
                score = max(score, (lb.mean - dip) / (lb.spread + 1) / 10)
            }
            out.append((k, score))
        }
        return out
    }

    /// The mean (which moves block by block as a candidate nears the boundary, so the best is
    /// where the change is) and the standard deviation.
    static func spread(_ values: ArraySlice<Float>) -> (mean: Float, spread: Float) {
        guard !values.isEmpty else { return (0, 0) }
        let mean = values.reduce(0, +) / Float(values.count)
        return (mean, (values.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Float(values.count)).squareRoot())
    }

    /// The mean (which moves block by block as a candidate nears the boundary, so the best is
    /// where the change is) and a spread that one odd block (a click where a track is cut) does
    /// not inflate: the standard deviation, or the median absolute deviation scaled to a normal
    /// distribution's deviation if that is less.
    static func robust(_ values: ArraySlice<Float>) -> (mean: Float, spread: Float) {
        guard !values.isEmpty else { return (0, 0) }
        let sorted = values.sorted()
        let median = sorted[sorted.count / 2]
        let deviations = sorted.map { abs($0 - median) }.sorted()
        let (mean, sd) = spread(values)
        return (mean, min(sd, 1.4826 * deviations[deviations.count / 2]))
    }
}
