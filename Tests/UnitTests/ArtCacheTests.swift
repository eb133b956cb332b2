import Foundation
@testable import Mopidy
import XCTest

final class ArtCacheTests: XCTestCase {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("groove-art-\(getpid())")
    override func tearDown() { try? FileManager.default.removeItem(at: dir) }

    func testResolveRelativeMopidyLocalURIs() {
        XCTAssertEqual(ArtCache.resolve("/local/ab.jpeg", base: "http://127.0.0.1:8180"), "http://127.0.0.1:8180/local/ab.jpeg")
        XCTAssertEqual(ArtCache.resolve("https://x/a.jpg", base: "http://h"), "https://x/a.jpg")
        XCTAssertEqual(ArtCache.fileURI("/tmp/a b/ü.jpg"), "file:///tmp/a%20b/%C3%BC.jpg")
    }

    func testDataURIBecomesAFileAndNonImagesAreRefused() throws {
        let cache = ArtCache(directory: dir.path)
        // A 1×1 PNG.
        let png = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
        let uri = try cache.localURI(for: png, base: "http://127.0.0.1")
        XCTAssertTrue(uri.hasPrefix("file://" + dir.path) && uri.hasSuffix(".png"), uri)
        let bytes = try Data(contentsOf: URL(string: uri)!)
        XCTAssertEqual(Array(bytes.prefix(4)), [0x89, 0x50, 0x4E, 0x47])
        XCTAssertEqual(try cache.localURI(for: png, base: "http://127.0.0.1"), uri, "second time from the cache")
        XCTAssertThrowsError(try cache.localURI(for: "data:text/plain;base64,aGVsbG8=", base: ""))
        XCTAssertThrowsError(try cache.localURI(for: "data:image/png;base64,@@@", base: ""))
    }

    func testEvictionKeepsTheFolderUnderItsLimit() throws {
        let cache = ArtCache(directory: dir.path, limitBytes: 2500)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        for i in 0..<5 {
            let path = dir.appendingPathComponent("\(i).jpg").path
            XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(count: 1000)))
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: Double(1000 + i))], ofItemAtPath: path)
        }
        cache.evict()
        let left = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        XCTAssertEqual(left, ["3.jpg", "4.jpg"], "the oldest go first")
    }
}
