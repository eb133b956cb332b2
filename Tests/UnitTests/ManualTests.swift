@testable import Bridge
import Foundation
import XCTest

/// The manual page (doc/groove-bridge.1) and the bash completion (completion/groove-bridge) list
/// the keys of `ConfigKey.all`, the one table the parser, `--help` and doc/configuration.md's table are made
/// from or held to. (ManualPageTests renders the page with groff.)
final class ManualTests: XCTestCase {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    func text(_ path: String) throws -> String {
        try String(contentsOf: ManualTests.root.appendingPathComponent(path), encoding: .utf8)
    }

    /// The page's CONFIGURATION entries: `.BI "key = " VALUE` and the paragraph under it.
    func manualKeys() throws -> [(name: String, value: String, paragraph: String)] {
        let page = try text("doc/groove-bridge.1")
        let section = try XCTUnwrap(page.components(separatedBy: "\n.SH CONFIGURATION\n").dropFirst().first)
            .components(separatedBy: "\n.SH ").first ?? ""
        return section.components(separatedBy: "\n.TP\n").dropFirst().compactMap { entry in
            let lines = entry.split(separator: "\n", omittingEmptySubsequences: false)
            guard let first = lines.first, first.hasPrefix(".BI \""), let eq = first.range(of: " = \" ") else { return nil }
            let name = String(first[first.index(first.startIndex, offsetBy: 5)..<eq.lowerBound])
            let value = String(first[eq.upperBound...])
            return (name, value, lines.dropFirst().joined(separator: " "))
        }
    }

    func testTheManualPageListsEveryKeyWithItsValueAndDefault() throws {
        let keys = try manualKeys()
        XCTAssertEqual(keys.map(\.name), Config.keys, "the page's keys, in the table's order")
        for (name, value, paragraph) in keys {
            guard let k = ConfigKey.named(name) else { continue }
            XCTAssertEqual(value, k.placeholder, name)
            XCTAssertTrue(paragraph.contains("Default: \(k.defaultShown)"), "\(name): no 'Default: \(k.defaultShown)' in \(paragraph)")
        }
        let page = try text("doc/groove-bridge.1")
        for needle in [".B status", ".B login", ".B \\-\\-password\\-stdin", ".SH FILES", ".SH SIGNALS", ".B SIGHUP",
                       ".SH EXIT STATUS", ".SH EXAMPLES"] {
            XCTAssertTrue(page.contains(needle), "the page has no \(needle)")
        }
    }

    func testTheCompletionOffersEveryKeyAndItsChoices() throws {
        let script = try text("completion/groove-bridge")
        let listed = try XCTUnwrap(script.components(separatedBy: "local keys='").dropFirst().first?.components(separatedBy: "'").first)
            .split(whereSeparator: \.isWhitespace).map(String.init)
        XCTAssertEqual(listed, ConfigKey.all.filter { $0.form != .secret }.map(\.flag))
        for k in ConfigKey.all where k.form == .takesValue {
            let line = script.split(separator: "\n").first { $0.trimmingCharacters(in: .whitespaces).hasPrefix(k.flag + ")")
                || $0.contains("|" + k.flag + ")") || $0.contains("|" + k.flag + "|") || $0.contains(k.flag + "|") }
            XCTAssertNotNil(line, "\(k.flag): the completion says nothing of its value")
            guard k.placeholder.contains("|"), let line else { continue }
            let body = script.components(separatedBy: line).dropFirst().first?.split(separator: "\n").first ?? ""
            XCTAssertTrue(body.contains("-W '\(k.placeholder.replacing("|", with: " "))'"), "\(k.flag): not \(k.placeholder) in \(body)")
        }
    }
}
