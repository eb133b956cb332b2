import DBus
import Foundation
@testable import MPRIS
import XCTest

final class MPRISStateTests: XCTestCase {
    func testChangesListOnlyWhatChangedAndNeverPosition() {
        var a = PlayerState()
        a.metadata = TrackMetadata(trackID: TrackMetadata.trackID(tlid: 1), title: "One")
        var b = a
        XCTAssertTrue(b.changes(since: a).isEmpty)
        b.positionUs = 123_456
        b.positionAnchorUs = 99
        XCTAssertTrue(b.changes(since: a).isEmpty, "Position must not be signalled")
        b.playbackStatus = .playing
        b.metadata.title = "Two"
        let c = b.changes(since: a)
        XCTAssertEqual(c.count, 1)
        XCTAssertEqual(c[0].interface, MPRISInterface.player)
        XCTAssertEqual(c[0].changed.map(\.0), ["PlaybackStatus", "Metadata"])
    }

    func testPositionExtrapolatesWhilePlayingAndStopsAtTheEnd() {
        var s = PlayerState()
        s.metadata = TrackMetadata(trackID: TrackMetadata.trackID(tlid: 1), lengthUs: 10_000_000)
        s.positionUs = 1_000_000
        s.positionAnchorUs = 5_000_000
        XCTAssertEqual(s.position(nowUs: 7_000_000), 1_000_000, "paused: no movement")
        s.positionAdvancing = true
        XCTAssertEqual(s.position(nowUs: 7_000_000), 3_000_000)
        XCTAssertEqual(s.position(nowUs: 60_000_000), 10_000_000)
    }

    func testMetadataOmitsEmptyKeysAndIsEmptyWithoutATrack() {
        XCTAssertEqual(TrackMetadata.none.dbusValue, .vardict([]), "no track: no metadata at all")
        let m = TrackMetadata(trackID: TrackMetadata.trackID(tlid: 3), lengthUs: 0, artURL: "", title: "")
        guard case .dict(_, _, let e2) = m.dbusValue else { return XCTFail() }
        XCTAssertEqual(e2.count, 1)
        XCTAssertFalse(TrackMetadata.trackID(tlid: 3).rawValue.hasPrefix("/org/mpris"))
    }

    func testObjectPathValidation() {
        for good in ["/", "/a", "/org/mpris/MediaPlayer2", "/a_1/B2"] { XCTAssertNotNil(ObjectPath(good), good) }
        for bad in ["", "a", "/a/", "//a", "/a-b", "/é", "/a//b"] { XCTAssertNil(ObjectPath(bad), bad) }
    }

    func testEmbeddedIntrospectionMatchesTheInstalledFile() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let file = try String(contentsOf: root.appendingPathComponent("dbus/org.mpris.MediaPlayer2.groove.xml"), encoding: .utf8)
        XCTAssertEqual(file.trimmingCharacters(in: .newlines), mprisIntrospectionXML.trimmingCharacters(in: .newlines))
        // Every property the state publishes is declared, and only those.
        let declared = Set(file.split(separator: "<property name=\"").dropFirst().map { String($0.prefix { $0 != "\"" }) })
        let published = Set((MPRISProperty.root + MPRISProperty.player + MPRISProperty.trackList
                             + MPRISProperty.playlists).map(\.name))
        XCTAssertEqual(declared, published)
        // Each value has the type its table declares.
        for iface in MPRISProperty.interfaces {
            for (name, value) in PlayerState().properties(of: iface, nowUs: 0)! {
                XCTAssertEqual(value.signature, MPRISProperty.table(of: iface)!.first { $0.name == name }!.type, name)
            }
        }
    }
}
