import Foundation
import Support
import XCTest

/// A reload (SIGHUP) whose configuration names another sink moves the music there: the sound
/// output of the connection before is closed at once, not reused by the next connection nor left
/// to play out what it holds. With `on_output_lost = follow`, where nothing else lets it go.
final class ReloadOutputTests: DaemonTestCase {
    private let sinks = ["groove_first_\(getpid())", "groove_second_\(getpid())"]
    private var modules: [String] = []
    private var configFile: URL { configDir.appendingPathComponent("config") }

    override var defaultArguments: [String] {
        ["--rpc-url", rig.info.groove_rpc_url, "--ws-url", rig.info.groove_ws_url,
         "--stream-url", rig.info.stream_url, "--config", configFile.path, "--autoplay"]
    }

    override func setUpWithError() throws {
        rig = try Rig.get()
        for s in sinks {
            let r = try runCommand(["pactl", "load-module", "module-null-sink", "sink_name=\(s)"], env: rig.clientEnvironment)
            XCTAssertEqual(r.status, 0, r.err)
            modules.append(r.out.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        try FileManager.default.createDirectory(at: configDir, withIntermediateDirectories: true)
        try writeConfig(sink: sinks[0])
        try super.setUpWithError()
    }

    override func tearDown() {
        super.tearDown()
        if let rig { for m in modules { _ = try? runCommand(["pactl", "unload-module", m], env: rig.clientEnvironment) } }
        modules = []
    }

    private func writeConfig(sink: String) throws {
        try "sink = \(sink)\non_output_lost = follow\n".write(to: configFile, atomically: true, encoding: .utf8)
        chmod(configFile.path, 0o600)
    }

    func testAReloadToAnotherSinkMovesTheMusicThere() throws {
        let tones = rig.info.tracks.map(\.freq)
        let first = try Recorder(rig: rig, source: "\(sinks[0]).monitor")
        defer { first.stop() }
        let second = try Recorder(rig: rig, source: "\(sinks[1]).monitor")
        defer { second.stop() }
        XCTAssertTrue(waitUntil(10) { first.recentTone(ms: 200, candidates: tones) != nil }, "no music on the first sink")
        XCTAssertTrue(waitUntil(5) { second.count >= Recorder.rate * 3 / 10 }, "the second sink's recorder delivered nothing")
        XCTAssertNil(second.recentTone(ms: 300, candidates: tones), "music on the second sink before the reload")

        try writeConfig(sink: sinks[1])
        let t0 = monotonicUs()
        kill(daemon.processIdentifier, SIGHUP)
        var heardAt: Int64? = nil
        _ = waitUntil(10) {
            heardAt = tones.compactMap { second.firstHeard($0, candidates: tones, fromUs: t0) }.min()
            return heardAt != nil
        }
        let heard = try XCTUnwrap(heardAt, "no music on the second sink within 10 s of the reload")
        print("reload → music on the other sink: \((heard - t0) / 1000) ms")
        // The first sink is let go when the old connection ends, at the reload: nothing of the
        // music there from a second after it (a loaded machine's margin) to 0.5 s past the new
        // sink's first music.
        _ = waitUntil(3) { first.index(atTime: heard + 500_000) < first.count }
        var loud: [Int64] = []
        var i = first.index(atTime: min(heard, t0 + 1_000_000))
        let end = first.index(atTime: heard + 500_000)
        while i + 441 <= end {
            if Tone.dominant(first.window(i, Recorder.rate / 50), rate: Recorder.rate, candidates: tones) != nil {
                loud.append((first.time(ofSample: i) - heard) / 1000)
            }
            i += 441
        }
        XCTAssertTrue(loud.isEmpty, "music on the first sink after the reload (ms after the second's first: \(loud))")
        XCTAssertEqual(try playerctl("status"), "Playing")
        XCTAssertTrue(daemonLog().contains("the sound output of the last connection is closed: another output is asked for"))
    }
}
