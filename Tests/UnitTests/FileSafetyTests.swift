@testable import Bridge
import Foundation
@testable import Mopidy
import Net
import XCTest

/// The files the bridge reads and writes: the configuration only when it is the user's own
/// regular file that no one else can write; cover art only in the user's own cache, each file
/// made new, and never a `file://` URI the server named.
final class FileSafetyTests: XCTestCase {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("groove-files-\(getpid())")

    override func setUpWithError() throws {
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    func config(_ text: String, mode: mode_t = 0o600, name: String = "config") throws -> String {
        let path = dir.appendingPathComponent(name).path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, mode)
        return path
    }

    func loadError(_ path: String, required: Bool = true) -> String? {
        do { _ = try ConfigLoader.load(path: path, required: required); return nil } catch { return error.message }
    }

    func testTheConfigurationIsReadOnlyFromTheUsersOwnUnwritableFile() throws {
        let good = try config("host = musicbox\npassword = hunter2\n")
        XCTAssertEqual(try ConfigLoader.load(path: good, required: true).password, "hunter2")

        for mode: mode_t in [0o620, 0o602, 0o666] {
            let path = try config("host = musicbox\n", mode: mode, name: "writable\(mode)")
            XCTAssertEqual(loadError(path), "refusing \(path): group or others can write it; whoever can change it decides "
                           + "what the bridge runs (password_command) and where the password goes; run: chmod go-w \(path)")
        }

        let link = dir.appendingPathComponent("link").path
        XCTAssertEqual(symlink(good, link), 0)
        XCTAssertEqual(loadError(link), "refusing \(link): it is a symbolic link, and the configuration is read only "
                       + "from a file itself; put the file there in place of the link")

        let fifo = dir.appendingPathComponent("fifo").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        XCTAssertEqual(loadError(fifo), "refusing \(fifo): it is not a regular file", "and it did not wait for a writer")
        XCTAssertEqual(loadError(dir.path), "refusing \(dir.path): it is not a regular file")

        let missing = dir.appendingPathComponent("missing").path
        XCTAssertNil(loadError(missing, required: false))
        XCTAssertEqual(loadError(missing), "\(missing): No such file or directory")

        // A password still needs a file no one else can read; the rest may be read by all.
        XCTAssertNil(loadError(try config("host = musicbox\n", mode: 0o644, name: "readable")))
        XCTAssertTrue(loadError(try config("password = x\n", mode: 0o640, name: "grouppw"))?
            .contains("refusing a password from a file that group or others can read") ?? false)
    }

    func testAConfigurationOfAnotherUserIsRefused() throws {
        guard geteuid() == 0 else {
            if ProcessInfo.processInfo.environment["CI"] == "true" { return XCTFail("CI must run as root to give a file to another user") }
            throw XCTSkip("giving a file to another user takes root")
        }
        let path = try config("host = musicbox\n")
        XCTAssertEqual(chown(path, 65534, 65534), 0)
        XCTAssertEqual(loadError(path), "refusing \(path): it belongs to user 65534, not to you (0); whoever can change it "
                       + "decides what the bridge runs (password_command) and where the password goes; run: chown 0 \(path)")
    }

    func testTheArtCacheLivesOnlyInTheUsersCache() {
        XCTAssertEqual(ArtCache.defaultDirectory(environment: ["XDG_CACHE_HOME": "/c", "HOME": "/h"]), "/c/groove-bridge/art")
        XCTAssertEqual(ArtCache.defaultDirectory(environment: ["XDG_CACHE_HOME": "", "HOME": "/h"]), "/h/.cache/groove-bridge/art")
        XCTAssertEqual(ArtCache.defaultDirectory(environment: ["XDG_CACHE_HOME": "rel", "HOME": "/h"]), "/h/.cache/groove-bridge/art")
        XCTAssertNil(ArtCache.defaultDirectory(environment: [:]), "no /tmp fallback")
        XCTAssertNil(ArtCache.defaultDirectory(environment: ["HOME": ""]))
        XCTAssertNil(ArtCache.defaultDirectory(environment: ["HOME": "relative"]))
        XCTAssertThrowsError(try ArtCache(directory: "").localURI(for: "/local/a.jpg", base: "http://h")) {
            XCTAssertEqual("\($0)", "no cover art cache (neither XDG_CACHE_HOME nor HOME is set)")
        }
    }

    func testOnlyHTTPAndDataArtIsFetchedNeverAServersFileURI() throws {
        let base = "http://127.0.0.1:8180"
        XCTAssertEqual(ArtCache.resolve("/local/ab.jpeg", base: base), base + "/local/ab.jpeg")
        XCTAssertEqual(ArtCache.resolve("local/ab.jpeg", base: base), base + "/local/ab.jpeg")
        XCTAssertEqual(ArtCache.resolve("HTTPS://x/a.jpg", base: base), "HTTPS://x/a.jpg")
        XCTAssertEqual(ArtCache.resolve("data:image/png;base64,AA", base: base), "data:image/png;base64,AA")
        for refused in ["file:///etc/passwd", "FILE:/home/u/.ssh/id_ed25519", "smb://h/s/a.jpg", "javascript:x", "ftp://h/a.jpg"] {
            XCTAssertNil(ArtCache.resolve(refused, base: base), refused)
        }
        let cache = ArtCache(directory: dir.appendingPathComponent("art").path)
        XCTAssertThrowsError(try cache.localURI(for: "file:///etc/passwd", base: base)) {
            XCTAssertEqual("\($0)", "cover art at file:///etc/passwd is not used: only http(s) and data: art is fetched")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir.appendingPathComponent("art").path), "made a folder for nothing")
    }

    static let png = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

    func testALinkPlantedWhereTheCacheWritesIsNotWrittenThrough() throws {
        let art = dir.appendingPathComponent("art")
        try FileManager.default.createDirectory(at: art, withIntermediateDirectories: true)
        chmod(art.path, 0o700)
        let victim = dir.appendingPathComponent("victim").path
        try "keep me".write(toFile: victim, atomically: true, encoding: .utf8)
        let name = sha1(Array(Self.png.utf8)).map { String($0, radix: 16).leftPadded(2) }.joined()
        XCTAssertEqual(symlink(victim, art.appendingPathComponent("\(name).png.tmp\(getpid())").path), 0)
        let uri = try ArtCache(directory: art.path).localURI(for: Self.png, base: "")
        XCTAssertTrue(uri.hasSuffix("/\(name).png"), uri)
        XCTAssertEqual(try String(contentsOfFile: victim, encoding: .utf8), "keep me")
        let written = try Data(contentsOf: art.appendingPathComponent("\(name).png"))
        XCTAssertEqual(Array(written.prefix(4)), [0x89, 0x50, 0x4E, 0x47])
    }

    func testACacheFolderThatIsALinkOrWritableByOthersIsNotUsed() throws {
        let elsewhere = dir.appendingPathComponent("elsewhere")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        let link = dir.appendingPathComponent("linked").path
        XCTAssertEqual(symlink(elsewhere.path, link), 0)
        XCTAssertThrowsError(try ArtCache(directory: link).localURI(for: Self.png, base: "")) {
            XCTAssertTrue("\($0)".contains("not a folder of yours that only you can write"), "\($0)")
        }
        let shared = dir.appendingPathComponent("shared")
        try FileManager.default.createDirectory(at: shared, withIntermediateDirectories: true)
        chmod(shared.path, 0o777)
        XCTAssertThrowsError(try ArtCache(directory: shared.path).localURI(for: Self.png, base: ""))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: elsewhere.path), [])
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: shared.path), [])
    }
}
