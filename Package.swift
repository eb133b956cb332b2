// swift-tools-version:6.0
// Groove Bridge: a Mopidy/Icecast (Groove Audio) server as a native MPRIS2 player on Linux.
import PackageDescription

// The shipped binary's modules. Release builds are optimised for size: the same CPU while playing
// (the decoding is libFLAC's; scripts/bench --only threads), 0.2 MB less of the binary resident.
// No module imports `_StringProcessing` implicitly: a string search from it (`contains("ab")`,
// `firstRange(of:)`, `replacing`) does not compile, and the statically linked runtime leaves it
// and `_RegexParser` out (Support/Text.swift has the searches; BENCHMARKS.md, Memory).
let ours: [SwiftSetting] = [
    .unsafeFlags(["-Osize"], .when(configuration: .release)),
    .unsafeFlags(["-Xfrontend", "-disable-implicit-string-processing-module-import"]),
]

let package = Package(
    name: "groove-bridge",
    products: [.executable(name: "groove-bridge", targets: ["groove-bridge"])],
    targets: [
        // C libraries from Debian, each imported by exactly one Swift module.
        .systemLibrary(name: "CDBus", pkgConfig: "dbus-1", providers: [.apt(["libdbus-1-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CFLAC", pkgConfig: "flac", providers: [.apt(["libflac-dev", "libogg-dev"])]),
        .systemLibrary(name: "CPulse", pkgConfig: "libpulse", providers: [.apt(["libpulse-dev"])]),

        // Threads, clock, retry schedule, logging: the floor every Swift module stands on.
        .target(name: "CSupport"),
        .target(name: "Support", dependencies: ["CSupport"], swiftSettings: ours),
        .target(name: "Net", dependencies: ["Support", "CCurl"], swiftSettings: ours),
        .target(name: "Mopidy", dependencies: ["Support", "Net"], swiftSettings: ours),
        .target(name: "DBus", dependencies: ["Support", "CDBus"], swiftSettings: ours),
        .target(name: "MPRIS", dependencies: ["Support", "DBus"], swiftSettings: ours),
        .target(name: "Audio", dependencies: ["Support", "Net", "CFLAC", "CPulse"], swiftSettings: ours),
        .target(name: "Bridge", dependencies: ["Support", "MPRIS", "Mopidy", "Audio"], swiftSettings: ours),
        // Release builds (what `make install` puts in place) carry the Swift runtime inside: the
        // installed binary then needs only Debian's libraries, not the toolchain it was built
        // with, and maps 2.4 MB less (BENCHMARKS.md). Debug and test builds link it dynamically.
        .executableTarget(name: "groove-bridge", dependencies: ["Support", "Net", "DBus", "MPRIS", "Mopidy", "Bridge"],
                          swiftSettings: ours,
                          linkerSettings: [.unsafeFlags(["-static-stdlib"], .when(configuration: .release))]),
        // Decoder + conversion alone, for instruction counts under callgrind (not installed).
        .executableTarget(name: "groove-decode-bench", dependencies: ["Audio"]),
        // The reducer and the MPRIS call handler under libFuzzer (scripts/fuzz builds it with
        // -sanitize=fuzzer,address -DFUZZING); a normal build replays saved inputs. Not installed.
        .executableTarget(name: "groove-bridge-fuzz", dependencies: ["Support", "DBus", "Net", "MPRIS", "Mopidy", "Audio", "Bridge"],
                          path: "Fuzz/BridgeFuzz"),

        .testTarget(name: "UnitTests", dependencies: ["Support", "Net", "Mopidy", "DBus", "MPRIS", "Audio", "Bridge"]),
        .testTarget(name: "IntegrationTests", dependencies: ["Support", "Net", "Mopidy", "DBus", "MPRIS", "Audio", "Bridge"]),
    ]
)
