import Support

/// The join at the live edge, before libFLAC sees a byte: Icecast sends seconds of old audio at
/// once when a listener connects. The input gathers that burst undecoded until the data pauses
/// (`burstGapMs`) with at least `joinKeepMs` in it, or the join's cap passes, or the bytes end;
/// then it hands libFLAC only what starts `joinKeepMs` before the newest position (BurstSkip),
/// so nothing is decoded only to be dropped. The output's join buffer then keeps the newest
/// `joinKeepMs` of what was decoded, as before.
extension StreamInput {
    /// The output's join may end once the kept bytes are decoded.
    func tellBurstOver() {
        guard burstOverToTell else { return }
        burstOverToTell = false
        burst?.burstPaused()
    }

    /// Samples skipped undecoded since the last call: the output counts them as decoded
    /// positions (the heard delay and the join's figure depend on them).
    func takeSkippedSamples() -> Int64 {
        defer { skippedSamples = 0 }
        return skippedSamples
    }

    private var joinOverdue: Bool { monotonicMs() - joinStartedMs > StreamTuning.joinCapMs }

    // MARK: - Native FLAC

    /// Reads the burst into `prefix`, then keeps from the frame `joinKeepMs` before the newest.
    func gatherNative() {
        var bytes = prefix
        bytes.removeFirst(prefixOffset)
        var at = arrivalMs
        gathering: while !joinOverdue && bytes.count < ring.capacity {
            let r = scratch.withUnsafeMutableBytes { readRing(into: $0) }
            switch r {
            case .bytes(let n):
                bytes.append(contentsOf: scratch[0..<n])
                at = ring.lastReadArrivalMs
            case .timedOut:
                if BurstSkip.nativeStart(bytes, keepMs: joinKeepMs) != nil { break gathering }
            case .ended:
                break gathering
            }
        }
        gathering = false
        prefixOffset = 0
        arrivalMs = at
        if let start = BurstSkip.nativeStart(bytes, keepMs: joinKeepMs) {
            prefix = Array(bytes[start.offset...])
            skippedSamples = start.skippedSamples
        } else {
            prefix = bytes
        }
        burstOverToTell = true
    }

    // MARK: - Ogg FLAC

    /// The next page for libFLAC: a released one, or one from the splitter (while gathering,
    /// audio pages are held instead), reading the ring as needed. Nil when the bytes ended.
    func nextPage() -> (page: OggPage, arrivalMs: Int)? {
        while true {
            if !released.isEmpty { return released.removeFirst() }
            if let p = splitter.next() {
                let item = (page: p, arrivalMs: readArrivalMs)
                guard gathering else { return item }
                if p.checksumValid && !p.beginsStream && p.granule != 0 {
                    gathered.append(item)
                    if joinOverdue { release() }
                } else if gathered.isEmpty {
                    return item  // a header page: libFLAC reads it at once
                } else {
                    // A new logical stream or a corrupt page: what was gathered goes first.
                    release()
                    released.append(item)
                }
                continue
            }
            tellBurstOver()
            switch scratch.withUnsafeMutableBytes({ readRing(into: $0) }) {
            case .bytes(let n):
                readArrivalMs = ring.lastReadArrivalMs
                splitter.feed(scratch[0..<n])
            case .timedOut:
                if !gathering {
                    burst?.burstPaused()
                } else if gatheredSpan().map({ $0.span >= $0.keep }) ?? false {
                    release()
                }
            case .ended:
                if gathering { release() }
                if released.isEmpty { return nil }
            }
        }
    }

    /// The audio gathered, newest end − first end, and the keep, in samples (nil before the rate
    /// is known from a frame header).
    private func gatheredSpan() -> (span: Int64, keep: Int64, rate: Int)? {
        guard let rate = gathered.reversed().lazy.map(\.page.frameSampleRate).first(where: { $0 > 0 }),
              let first = gathered.first(where: { $0.page.granule >= 0 })?.page.granule,
              let last = gathered.last(where: { $0.page.granule >= 0 })?.page.granule else { return nil }
        return (last - first, Int64(joinKeepMs) * Int64(rate) / 1000, rate)
    }

    /// Ends gathering: the pages from `joinKeepMs` before the newest go to libFLAC.
    private func release() {
        var start = 0
        if let g = gatheredSpan() {
            let cut = BurstSkip.oggStart(granules: gathered.map(\.page.granule), keepSamples: g.keep)
            start = cut.index
            skippedSamples = cut.skippedSamples
        }
        released.append(contentsOf: gathered[start...])
        gathered = []
        gathering = false
        burstOverToTell = true
    }
}
