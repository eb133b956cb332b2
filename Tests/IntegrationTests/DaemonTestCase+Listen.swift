import Foundation
import Mopidy
import MPRIS
import XCTest

extension DaemonTestCase {
    /// The daemon started anew on the rig's link `name` (a clean plan; made clean again after
    /// the test), with `arguments` more.
    func startDaemonOnLink(_ name: String, _ arguments: [String] = []) throws {
        stopDaemon()
        XCTAssertTrue(waitUntil(3) { client.owner(of: MPRISService.busName) == nil })
        let link = try XCTUnwrap(rig.command(["cmd": "link", "name": name, "plan": [String: Any]()]) as? [String: Any])
        addTeardownBlock { [rig] in _ = try? rig?.command(["cmd": "link", "name": name, "plan": [String: Any]()]) }
        try startDaemon(["--stream-url", try XCTUnwrap(link["stream_url"] as? String)] + arguments)
    }

    /// What a heard-now test listens with, stopped after the test: the sink recorded (`recorder`,
    /// its first tone heard within `toneTimeout`), the rig's tones, the bridge's title signals
    /// and Mopidy's events on a socket of their own.
    func listen(toneTimeout: Double) throws -> (recorder: Recorder, tones: [Int], titles: TitleSignals, events: TimedEvents) {
        let rec = try Recorder(rig: rig, sound: sound)
        recorder = rec
        let tones = rig.info.tracks.map(\.freq)
        XCTAssertNotNil(rec.waitForTone(try expectedTone(), candidates: tones, timeout: toneTimeout), "the recorder heard no tone")
        let titles = try TitleSignals(busAddress: rig.info.bus_address)
        addTeardownBlock { titles.stop() }
        let events = TimedEvents()
        let stream = MopidyEventStream(url: rig.info.mopidy_ws_url, delegate: events)
        stream.start()
        addTeardownBlock { stream.stop() }
        return (rec, tones, titles, events)
    }
}
