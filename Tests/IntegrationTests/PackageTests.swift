import Foundation
import Support
import XCTest

/// scripts/package: the Debian package builds from a release build, passes lintian without
/// errors, installs with dpkg, runs, and is removed leaving nothing behind. Installing needs
/// root (CI runs as root); elsewhere the test says so and skips, never under CI.
final class PackageTests: XCTestCase {
    static let tools = ["dpkg-deb", "dpkg-shlibdeps", "lintian", "strip", "gzip", "man", "groff"]

    func testThePackageBuildsPassesLintianInstallsRunsAndLeavesNothing() throws {
        try Rig.requireTools(PackageTests.tools)
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("groove-package-\(getpid())")
        defer { try? FileManager.default.removeItem(at: out) }
        let t0 = monotonicUs()
        let built = try runCommand([Rig.projectRoot.appendingPathComponent("scripts/package").path, out.path], timeout: 600)
        XCTAssertEqual(built.status, 0, built.out + built.err)
        let deb = try XCTUnwrap(built.out.split(separator: "\n").last.map(String.init))
        XCTAssertTrue(deb.hasSuffix("_\(try dpkgArchitecture()).deb") && deb.contains("/groove-bridge_"), deb)
        print("package: built in \((monotonicUs() - t0) / 1_000_000) s: \(built.out)")

        let fields = try runCommand(["dpkg-deb", "--field", deb, "Package", "Version", "Depends"])
        XCTAssertTrue(fields.out.contains("Package: groove-bridge"), fields.out)
        // Computed from the binary: Debian's libraries, and nothing of the Swift toolchain.
        for lib in ["libc6", "libcurl", "libdbus-1-3", "libflac", "libpulse0"] {
            XCTAssertTrue(fields.out.contains(lib), "Depends without \(lib): \(fields.out)")
        }
        XCTAssertFalse(fields.out.lowercased().contains("swift"), fields.out)

        let lint = try runCommand(["lintian", "--fail-on", "error", "--tag-display-limit", "0", deb], timeout: 300)
        print("lintian: \(lint.out)")
        XCTAssertEqual(lint.status, 0, lint.out + lint.err)
        XCTAssertFalse(lint.out.split(separator: "\n").contains { $0.hasPrefix("E: ") }, lint.out)

        guard geteuid() == 0 else {
            if ProcessInfo.processInfo.environment["CI"] == "true" { return XCTFail("CI must run as root to install the package") }
            throw XCTSkip("installing the package needs root")
        }
        let before = try runCommand(["dpkg-query", "-W", "-f", "${Status}", "groove-bridge"])
        if before.status == 0 && Self.leftOnlyConfiguration(before.out) {
            // Removed once, not purged: nothing of it runs, and this test's own purge clears it.
            let purged = try runCommand(["dpkg", "--purge", "groove-bridge"], timeout: 120)
            XCTAssertEqual(purged.status, 0, purged.out + purged.err)
        } else if before.status == 0 && Self.present(before.out) {
            return XCTFail("a groove-bridge package is installed on this machine (\(before.out)): the test will not replace it")
        }
        let listed = try runCommand(["dpkg-deb", "--contents", deb]).out.split(separator: "\n").compactMap { line in
            line.split(separator: " ", omittingEmptySubsequences: true).last.map { String($0.dropFirst()) }  // "./usr/…" → "/usr/…"
        }
        let existing = Set(listed.filter { FileManager.default.fileExists(atPath: $0) })
        let install = try runCommand(["dpkg", "-i", deb], timeout: 120)
        defer { _ = try? runCommand(["dpkg", "--purge", "groove-bridge"], timeout: 120) }
        XCTAssertEqual(install.status, 0, install.out + install.err)
        let version = try runCommand(["/usr/bin/groove-bridge", "--version"])
        XCTAssertEqual(version.status, 0, version.err)
        XCTAssertTrue(version.out.hasPrefix("groove-bridge "), version.out)
        let manual = try runCommand(["man", "--warnings", "groove-bridge"], env: ["MANWIDTH": "80", "PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"])
        XCTAssertEqual(manual.status, 0, manual.err)
        XCTAssertTrue(manual.out.contains("groove-bridge login"), "man groove-bridge: \(manual.out.prefix(300))")
        XCTAssertEqual(manual.err, "", "man warns")

        let purge = try runCommand(["dpkg", "--purge", "groove-bridge"], timeout: 120)
        XCTAssertEqual(purge.status, 0, purge.out + purge.err)
        let left = listed.filter { !existing.contains($0) && FileManager.default.fileExists(atPath: $0) }
        XCTAssertEqual(left, [], "left behind after dpkg --purge")
    }

    /// dpkg's `${Status}` ("want flag status") says the package's files are there: anything but
    /// never installed or removed with only its configuration files left.
    static func present(_ status: String) -> Bool {
        guard let state = status.split(separator: " ").last else { return false }
        return state != "not-installed" && state != "config-files"
    }

    static func leftOnlyConfiguration(_ status: String) -> Bool { status.split(separator: " ").last == "config-files" }

    func testAPackageRemovedButNotPurgedIsNotTakenForAnInstalledOne() {
        let table: [(String, present: Bool, configOnly: Bool)] = [
            ("install ok installed", true, false),
            ("deinstall ok config-files", false, true),
            ("purge ok not-installed", false, false),
            ("install ok unpacked", true, false),
            ("install reinstreq half-installed", true, false),
            ("hold ok installed", true, false),
            ("", false, false),
        ]
        for (status, present, configOnly) in table {
            XCTAssertEqual(Self.present(status), present, status)
            XCTAssertEqual(Self.leftOnlyConfiguration(status), configOnly, status)
        }
    }

    func dpkgArchitecture() throws -> String {
        try runCommand(["dpkg", "--print-architecture"]).out.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// The manual page renders without a warning (what `man -l` and lintian see).
final class ManualPageTests: XCTestCase {
    func testTheManualPageRendersWithoutWarnings() throws {
        try Rig.requireTools(["groff", "man"])
        let page = Rig.projectRoot.appendingPathComponent("doc/groove-bridge.1").path
        let groff = try runCommand(["groff", "-ww", "-z", "-man", page])
        XCTAssertEqual(groff.status, 0, groff.err)
        XCTAssertEqual(groff.err, "", "groff warns")
        let env = ["MANWIDTH": "80", "PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"]
        let man = try runCommand(["man", "--warnings", "-l", page], env: env)
        XCTAssertEqual(man.status, 0, man.err)
        XCTAssertEqual(man.err, "", "man -l warns")
        XCTAssertTrue(man.out.contains("EXIT STATUS") && man.out.contains("SIGHUP"), man.out)
    }
}
