/// Decode, its first half: a connection's bytes, as they arrive, cut into units that libFLAC
/// decodes whole — each frame, with its header (where it lies in the stream, how long it is),
/// and the stream's metadata before the frames — each dated by when its last byte arrived.
/// Ogg FLAC by its pages' packets (the Ogg FLAC mapping: each audio packet is a frame, each
/// header packet a metadata block, the first behind a 9-byte preamble); native FLAC at its frame
/// headers (a frame ends where the next header begins, so the newest waits for the next). The
/// join (which frames to decode), the switch (where two connections line up) and libFLAC's input
/// all read these units: one Ogg page splitter, one frame-header reader. Pure and bounded;
/// unit-tested and fuzzed (`scripts/fuzz stream`).
struct FrameReader {
    enum Kind: Equatable {
        /// Stream metadata: the `fLaC` marker, STREAMINFO and the other blocks.
        case metadata
        case frame(Header)
        /// A new chained Ogg logical stream begins: libFLAC starts afresh before the next unit.
        case newStream
    }

    struct Unit: Equatable {
        var kind: Kind
        var bytes: [UInt8]
        /// When its last byte arrived.
        var arrival: Instant
        var header: Header? { if case .frame(let h) = kind { return h } else { return nil } }
    }

    /// A FLAC frame header (RFC 9639 §9.1) whose CRC-8 matched.
    struct Header: Equatable, Sendable {
        /// The frame's first sample (fixed block size: frame number × block size): the same on
        /// every connection to the mount.
        var firstSample: Int64
        var blockSize: Int
        /// 0 when the header defers to STREAMINFO.
        var sampleRate: Int
        var end: Int64 { firstSample.addingReportingOverflow(Int64(blockSize)).partialValue }
    }

    let ogg: Bool
    private var ready: [Unit] = []
    private var readyHead = 0
    /// Corrupt pages, and units given up on (too long), so far.
    private(set) var lostSync = 0
    // Ogg FLAC.
    private var splitter = OggPage.Splitter()
    private var serial: UInt32? = nil
    /// The packet a page left open, while the pages go on in sequence.
    private var packet: [UInt8]? = nil
    private var lastSequence: UInt32? = nil
    // Native FLAC: bytes not yet cut; the unit under way starts at `unitStart` (with `current`,
    // its frame header; nil before the first); header positions are looked for from `scanned`.
    private var pending: [UInt8] = []
    private var unitStart = 0
    private var current: Header? = nil
    private var scanned = 0
    /// (end offset in `pending`, when those bytes arrived), oldest first from `arrivalsHead`.
    private var arrivals: [(end: Int, at: Instant)] = []
    private var arrivalsHead = 0

    /// The longest unit held: longer than any FLAC frame (65 535 samples × 8 channels × 32 bits)
    /// vs. memory held for a stream that is not FLAC after all.
    static let maxUnitBytes = 4 << 20
    /// A frame header is at most this long (the longest coded number, block size and rate).
    static let headerBytes = 16

    init(ogg: Bool) { self.ogg = ogg }

    /// The next whole unit, oldest first.
    mutating func next() -> Unit? {
        guard readyHead < ready.count else { return nil }
        defer {
            readyHead += 1
            if readyHead == ready.count {
                ready.removeAll(keepingCapacity: true)
                readyHead = 0
            }
        }
        return ready[readyHead]
    }

    /// Units ready, not yet taken.
    var readyCount: Int { ready.count - readyHead }

    /// Bytes that arrived together at `arrival`.
    mutating func feed<C: Collection>(_ bytes: C, arrival: Instant) where C.Element == UInt8 {
        if ogg {
            splitter.feed(bytes)
            while let page = splitter.next() { take(page, arrival: arrival) }
        } else {
            pending.append(contentsOf: bytes)
            if arrivalsHead < arrivals.count, arrivals[arrivals.count - 1].at == arrival {
                arrivals[arrivals.count - 1].end = pending.count
            } else {
                arrivals.append((pending.count, arrival))
            }
            cutNative(final: false)
        }
    }

    /// The bytes ended: what is left of a native frame is its last unit.
    mutating func finish() {
        guard !ogg else { return }
        cutNative(final: true)
    }
}

extension FrameReader {
    // MARK: - Ogg FLAC

    private mutating func take(_ page: OggPage, arrival: Instant) {
        guard page.checksumValid else {
            lostSync += 1
            packet = nil  // its tail, on the next page, is left out
            return
        }
        if page.beginsStream, let s = serial, s != page.serial {
            ready.append(Unit(kind: .newStream, bytes: [], arrival: arrival))
            serial = nil
            packet = nil
        }
        // A page of another logical stream multiplexed beside this one: not its FLAC.
        if let s = serial, s != page.serial { return }
        serial = page.serial
        let b = page.bytes
        let segments = Int(b[26])
        // A packet continued from the page before is kept only if that page was this one's
        // predecessor and kept its start; otherwise its part here is skipped.
        var open = page.continued && lastSequence.map { page.sequence == $0 &+ 1 } == true ? packet : nil
        var skipping = page.continued && open == nil
        lastSequence = page.sequence
        packet = nil
        var first = true, start = 27 + segments, offset = start
        for k in 0..<segments {
            let lace = Int(b[27 + k])
            offset += lace
            guard lace < 255 else { continue }
            // A packet ends here: [start, offset) of this page, after what an earlier page began.
            if !skipping {
                let p = open.map { $0 + b[start..<offset] } ?? Array(b[start..<offset])
                emit(packet: p, preamble: first && page.beginsStream, arrival: arrival)
            }
            (open, skipping, first, start) = (nil, false, false, offset)
        }
        // A packet the page leaves open (its last lacing value is 255) goes on on the next page.
        if segments > 0 && b[26 + segments] == 255 && !skipping {
            let p = (open ?? []) + b[start..<offset]
            if p.count > Self.maxUnitBytes { lostSync += 1 } else { packet = p }
        }
    }

    private mutating func emit(packet p: [UInt8], preamble: Bool, arrival: Instant) {
        // The first header packet: 0x7F "FLAC", version, header count, then `fLaC` and STREAMINFO.
        if preamble && p.count >= 9 && p[0] == 0x7F && p[1] == 0x46 && p[2] == 0x4C && p[3] == 0x41 && p[4] == 0x43 {
            ready.append(Unit(kind: .metadata, bytes: Array(p[9...]), arrival: arrival))
        } else if p.count >= 2 && p[0] == 0xFF && p[1] & 0xFE == 0xF8 {
            // A metadata block never starts with 0xFF (its type 127 is invalid): this is a frame.
            guard let h = Self.header(p, at: 0) else {
                lostSync += 1
                return
            }
            ready.append(Unit(kind: .frame(h), bytes: p, arrival: arrival))
        } else if !p.isEmpty {
            ready.append(Unit(kind: .metadata, bytes: p, arrival: arrival))
        }
    }

    // MARK: - Native FLAC

    private mutating func cutNative(final: Bool) {
        // A stream from its start: `fLaC` and the metadata blocks, to the one marked last.
        if current == nil && unitStart == 0, let end = Self.metadataEnd(pending, final: final) {
            if end > 0 { cut(at: end, kind: .metadata) }
            scanned = max(scanned, end)
        } else if current == nil && unitStart == 0 && pending.starts(with: [0x66, 0x4C, 0x61, 0x43]) {
            return  // its metadata is still coming
        }
        let limit = final ? pending.count : pending.count - Self.headerBytes + 1
        while let at = Self.syncByte(in: pending, from: scanned, below: limit) {
            scanned = at + 1
            guard let h = Self.header(pending, at: at) else { continue }
            // Before the first header: the tail of a frame this connection joined within.
            if let c = current { cut(at: at, kind: .frame(c)) } else { drop(to: at) }
            current = h
        }
        scanned = max(scanned, limit)
        if final, let c = current, unitStart < pending.count {
            cut(at: pending.count, kind: .frame(c))
            current = nil
        } else if pending.count - unitStart > Self.maxUnitBytes {
            lostSync += 1
            drop(to: pending.count)
            current = nil
        }
        compact()
    }

    /// The first 0xFF (a frame header's first byte) in `b[from..<end]`: every byte of a frame
    /// is looked at here, so without a bounds check per byte.
    static func syncByte(in b: [UInt8], from: Int, below end: Int) -> Int? {
        guard from >= 0, from < end, end <= b.count else { return nil }
        return b.withUnsafeBufferPointer { p in
            var i = from
            while i < end {
                if p[i] == 0xFF { return i }
                i += 1
            }
            return nil
        }
    }

    /// Where `fLaC` and its metadata blocks end (nil: the bytes do not begin with `fLaC`, or
    /// the last block is not all here yet and more may come).
    static func metadataEnd(_ b: [UInt8], final: Bool) -> Int? {
        guard b.starts(with: [0x66, 0x4C, 0x61, 0x43]) else { return nil }
        var at = 4
        while at + 4 <= b.count {
            let length = Int(b[at + 1]) << 16 | Int(b[at + 2]) << 8 | Int(b[at + 3])
            let next = at + 4 + length
            guard next <= b.count else { break }
            if b[at] & 0x80 != 0 { return next }
            at = next
        }
        return final ? b.count : nil
    }

    private mutating func cut(at end: Int, kind: Kind) {
        while arrivalsHead < arrivals.count - 1 && arrivals[arrivalsHead].end < end { arrivalsHead += 1 }
        let arrival = arrivalsHead < arrivals.count ? arrivals[arrivalsHead].at : Instant(ms: 0)
        ready.append(Unit(kind: kind, bytes: Array(pending[unitStart..<end]), arrival: arrival))
        unitStart = end
    }

    private mutating func drop(to end: Int) { unitStart = end }

    /// Lets go of the bytes before the unit under way.
    private mutating func compact() {
        while arrivalsHead < arrivals.count - 1 && arrivals[arrivalsHead].end <= unitStart { arrivalsHead += 1 }
        guard unitStart >= 64 * 1024 || unitStart == pending.count else { return }
        pending.removeFirst(unitStart)
        scanned -= unitStart
        arrivals.removeFirst(arrivalsHead)
        arrivalsHead = 0
        for i in arrivals.indices { arrivals[i].end -= unitStart }
        unitStart = 0
    }

    // MARK: - Frame headers

    /// The header of a frame starting at `b[i]`, or nil (not a sync code, a reserved value, or a
    /// CRC-8 mismatch: random bytes pass all of that about once in 2^30 positions).
    static func header(_ b: [UInt8], at i: Int) -> Header? {
        guard i >= 0, i + 5 < b.count, b[i] == 0xFF, b[i + 1] & 0xFE == 0xF8 else { return nil }
        let variable = b[i + 1] & 1 == 1
        let sizeCode = Int(b[i + 2] >> 4), rateCode = Int(b[i + 2] & 0x0F)
        guard sizeCode != 0, rateCode != 15, b[i + 3] & 1 == 0, (b[i + 3] >> 1) & 7 != 3, b[i + 3] >> 4 < 11 else { return nil }
        // The coded number: UTF-8-like, up to 7 bytes.
        var p = i + 4
        let lead = b[p]
        guard lead != 0xFF else { return nil }
        var extra = 0
        while extra < 7 && lead & (0x80 >> UInt8(extra)) != 0 { extra += 1 }
        guard extra != 1, extra <= (variable ? 7 : 6) else { return nil }
        var number = Int64(extra == 0 ? lead : lead & (0xFF >> UInt8(extra + 1)))
        let more = extra == 0 ? 0 : extra - 1
        guard p + more < b.count else { return nil }
        for k in 0..<more {
            let c = b[p + 1 + k]
            guard c & 0xC0 == 0x80 else { return nil }
            number = number << 6 | Int64(c & 0x3F)
        }
        p += 1 + more
        var blockSize: Int
        switch sizeCode {
        case 1: blockSize = 192
        case 2...5: blockSize = 576 << (sizeCode - 2)
        case 6, 7:
            let n = sizeCode == 6 ? 1 : 2
            guard p + n <= b.count else { return nil }
            blockSize = (n == 1 ? Int(b[p]) : Int(b[p]) << 8 | Int(b[p + 1])) + 1
            p += n
        default: blockSize = 256 << (sizeCode - 8)
        }
        let rates = [0, 88200, 176400, 192000, 8000, 16000, 22050, 24000, 32000, 44100, 48000, 96000]
        var rate = rateCode < 12 ? rates[rateCode] : 0
        if rateCode >= 12 {
            let n = rateCode == 12 ? 1 : 2
            guard p + n <= b.count else { return nil }
            let v = n == 1 ? Int(b[p]) : Int(b[p]) << 8 | Int(b[p + 1])
            rate = rateCode == 12 ? v * 1000 : rateCode == 13 ? v : v * 10
            p += n
        }
        guard p < b.count, crc8(b, i, p) == b[p] else { return nil }
        return Header(firstSample: variable ? number : number * Int64(blockSize), blockSize: blockSize, sampleRate: rate)
    }

    /// CRC-8, polynomial x^8 + x^2 + x + 1, over `b[from..<to]`.
    static func crc8(_ b: [UInt8], _ from: Int, _ to: Int) -> UInt8 {
        var crc: UInt8 = 0
        for k in from..<to {
            crc ^= b[k]
            for _ in 0..<8 { crc = crc & 0x80 != 0 ? (crc << 1) ^ 0x07 : crc << 1 }
        }
        return crc
    }
}
