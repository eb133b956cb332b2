import Audio
import Foundation
import Support
import Synchronization
import Net
import XCTest

/// Stream variants served by a small local server (Tests/Fixtures/stream_server.py): every
/// sample format, native and Ogg, a format change, chained Ogg, corrupt bytes, HTML.
final class StreamVariantTests: XCTestCase {
    nonisolated(unsafe) static var server: Process?
    nonisolated(unsafe) static var port = 0
    nonisolated(unsafe) static var dir: URL!
    var rig: Rig!
    var recorder: Recorder!
    var players: [StreamPlayer] = []
    final class Lines: Sendable { let list = Mutex<[String]>([]) }
    let logLines = Lines()

    override class func setUp() {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("groove-variants-\(getpid())")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override class func tearDown() {
        server?.terminate()
        server?.waitUntilExit()
        try? FileManager.default.removeItem(at: dir)
    }

    override func setUpWithError() throws {
        rig = try Rig.get()
        recorder = try Recorder(rig: rig)
        if Self.server == nil {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            p.arguments = ["python3", Rig.projectRoot.appendingPathComponent("Tests/Fixtures/stream_server.py").path, Self.dir.path]
            let out = Pipe()
            p.standardOutput = out
            p.standardError = FileHandle.nullDevice
            try p.run()
            let line = LineReader(out.fileHandleForReading).readLine(timeout: 10)
            Self.port = Int(line ?? "") ?? 0
            Self.server = p
            XCTAssertGreaterThan(Self.port, 0)
        }
        let lines = logLines
        Log.setSink { line in lines.list.withLock { $0.append(line) } }
    }

    override func tearDown() {
        Log.setSink(nil)
        for p in players { p.stop() }
        players = []
        recorder?.stop()
        usleep(300_000)
    }

    /// A tone file: `sox` → WAV, `flac` → native or Ogg FLAC.
    @discardableResult
    func makeTone(_ name: String, freq: Int, seconds: Double, rate: Int, bits: Int, channels: Int,
                  ogg: Bool = false, serial: Int? = nil) throws -> URL {
        let wav = Self.dir.appendingPathComponent(name + ".wav")
        let out = Self.dir.appendingPathComponent(name)
        var r = try runCommand(["sox", "-n", "-r", "\(rate)", "-b", "\(bits)", "-c", "\(channels)", wav.path,
                                "synth", "\(seconds)", "sine", "\(freq)", "vol", "0.5"])
        XCTAssertEqual(r.status, 0, r.err)
        var args = ["flac", "-s", "-f", "--no-md5-sum", "-o", out.path]
        if ogg { args.append("--ogg") }
        if let serial { args.append("--serial-number=\(serial)") }
        r = try runCommand(args + [wav.path])
        XCTAssertEqual(r.status, 0, r.err)
        return out
    }

    func concat(_ name: String, _ parts: [URL]) throws {
        var data = Data()
        for p in parts { data.append(try Data(contentsOf: p)) }
        try data.write(to: Self.dir.appendingPathComponent(name))
    }

    func play(_ path: String) -> StreamPlayer {
        var c = StreamConfig(url: "http://127.0.0.1:\(Self.port)/\(path)", sink: rig.info.sink)
        c.pulseServer = rig.info.pulse_server
        c.joinBufferMs = 300
        let p = StreamPlayer(config: c, delegate: nil)
        players.append(p)
        p.play()
        return p
    }

    func testEverySampleFormatNativeAndOgg() throws {
        let formats = [(44100, 16, 2), (48000, 24, 2), (96000, 24, 1), (44100, 16, 1), (48000, 16, 2)]
        for (rate, bits, ch) in formats {
            for ogg in [false, true] {
                let name = "tone-\(rate)-\(bits)-\(ch)\(ogg ? ".oga" : ".flac")"
                try makeTone(name, freq: 1000, seconds: 3, rate: rate, bits: bits, channels: ch, ogg: ogg)
                let p = play("\(name)?seconds=3")
                let want = AudioFormat(sampleRate: rate, channels: ch, bitsPerSample: bits)
                XCTAssertTrue(waitUntil(5) { p.currentFigures.format == want }, "\(name): format \(String(describing: p.currentFigures.format))")
                XCTAssertNotNil(recorder.waitForTone(1000, candidates: [500, 1000, 1500], timeout: 4), "\(name): tone not heard")
                p.stop()
            }
        }
    }

    func testFormatChangeMidStreamReopensTheSink() throws {
        let a = try makeTone("a.flac", freq: 500, seconds: 3, rate: 44100, bits: 16, channels: 2)
        let b = try makeTone("b.flac", freq: 1500, seconds: 3, rate: 96000, bits: 24, channels: 1)
        try concat("change.flac", [a, b])
        let sizes = try [a, b].map { try Data(contentsOf: $0).count }
        _ = play("change.flac?pace=\(sizes[0]):3,\(sizes[1]):3&burst=4096")
        XCTAssertNotNil(recorder.waitForTone(500, candidates: [500, 1000, 1500], timeout: 5), "first part not heard")
        XCTAssertNotNil(recorder.waitForTone(1500, candidates: [500, 1000, 1500], timeout: 6), "second part not heard")
        let lines = logLines.list.withLock { $0 }
        XCTAssertTrue(lines.contains { $0.contains("playing FLAC 16-bit 44100 Hz stereo") })
        XCTAssertTrue(lines.contains { $0.contains("playing FLAC 24-bit 96000 Hz mono") })
    }

    func testChainedOggKeepsPlaying() throws {
        let a = try makeTone("c1.oga", freq: 500, seconds: 3, rate: 44100, bits: 16, channels: 2, ogg: true, serial: 11)
        let b = try makeTone("c2.oga", freq: 1500, seconds: 3, rate: 48000, bits: 16, channels: 2, ogg: true, serial: 22)
        try concat("chain.oga", [a, b])
        let sizes = try [a, b].map { try Data(contentsOf: $0).count }
        _ = play("chain.oga?pace=\(sizes[0]):3,\(sizes[1]):3&burst=4096")
        XCTAssertNotNil(recorder.waitForTone(500, candidates: [500, 1000, 1500], timeout: 5), "first stream not heard")
        XCTAssertNotNil(recorder.waitForTone(1500, candidates: [500, 1000, 1500], timeout: 6), "second logical stream not heard")
    }

    func testCorruptBytesResyncAndGoOn() throws {
        try makeTone("long.flac", freq: 1000, seconds: 8, rate: 44100, bits: 16, channels: 2)
        try makeTone("long.oga", freq: 1000, seconds: 8, rate: 44100, bits: 16, channels: 2, ogg: true)
        for name in ["long.flac", "long.oga"] {
            // A few flipped bits every 40 KB: libFLAC outputs a frame that fails its CRC as silence,
            // so the tone must come back right after each.
            let p = play("\(name)?seconds=8&burst=4096&flip=2&every=40000&seed=7")
            XCTAssertTrue(waitUntil(5) { p.currentStatus == .playing }, "\(name): \(p.currentStatus)")
            let before = p.currentFigures.samplesDecoded
            XCTAssertTrue(waitUntil(5) { p.currentFigures.samplesDecoded > before + 44100 * 2 }, "\(name): decoding stopped")
            XCTAssertNotNil(recorder.waitForTone(1000, candidates: [500, 1000, 1500], timeout: 3), "\(name): tone lost")
            XCTAssertTrue(waitUntil(8) { p.currentFigures.lostSync > 0 }, "\(name): no corruption was seen")
            XCTAssertNotNil(recorder.waitForTone(1000, candidates: [500, 1000, 1500], timeout: 3), "\(name): tone lost after corruption")
            p.stop()
        }
    }

    func testHTMLInsteadOfAudioIsAClearError() throws {
        try "<!DOCTYPE html><html><body>Please log in</body></html>".write(
            to: Self.dir.appendingPathComponent("login.html"), atomically: true, encoding: .utf8)
        let p = play("login.html")
        XCTAssertTrue(waitUntil(5) { if case .failed = p.currentStatus { return true }; return false }, "\(p.currentStatus)")
        guard case .failed(let failure, _) = p.currentStatus else { return }
        XCTAssertEqual(failure.kind, .other, "not FLAC is no refused password")
        let reason = failure.message
        XCTAssertTrue(reason.contains("is not FLAC"), reason)
        XCTAssertTrue(reason.contains("text/html"), reason)
        XCTAssertTrue(reason.contains("/login.html"), reason)
        XCTAssertTrue(reason.contains("<!DOCTYPE"), reason)
    }
}
