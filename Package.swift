// swift-tools-version:6.0
// Groove Bridge: a Mopidy/Icecast (Groove Audio) server as a native MPRIS2 player on Linux.
import PackageDescription

// Release builds are optimised for size: the same CPU while playing (the decoding is libFLAC's;
// scripts/bench --only threads), 0.2 MB less of the binary resident (BENCHMARKS.md).
let releaseForSize: [SwiftSetting] = [.unsafeFlags(["-Osize"], .when(configuration: .release))]

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
        .target(name: "Support", dependencies: ["CSupport"], swiftSettings: releaseForSize),
        .target(name: "Net", dependencies: ["Support", "CCurl"], swiftSettings: releaseForSize),
        .target(name: "Mopidy", dependencies: ["Support", "Net"], swiftSettings: releaseForSize),
        .target(name: "DBus", dependencies: ["Support", "CDBus"], swiftSettings: releaseForSize),
        .target(name: "MPRIS", dependencies: ["Support", "DBus"], swiftSettings: releaseForSize),
        .target(name: "Audio", dependencies: ["Support", "Net", "CFLAC", "CPulse"], swiftSettings: releaseForSize),
        .target(name: "Bridge", dependencies: ["Support", "MPRIS", "Mopidy", "Audio"], swiftSettings: releaseForSize),
        // Release builds (what `make install` puts in place) carry the Swift runtime inside: the
        // installed binary then needs only Debian's libraries, not the toolchain it was built
        // with, and maps 2.4 MB less (BENCHMARKS.md). Debug and test builds link it dynamically.
        .executableTarget(name: "groove-bridge", dependencies: ["Support", "Net", "DBus", "MPRIS", "Mopidy", "Bridge"],
                          swiftSettings: releaseForSize,
                          linkerSettings: [.unsafeFlags(["-static-stdlib"], .when(configuration: .release))]),
        // Decoder + conversion alone, for instruction counts under callgrind (not installed).
        .executableTarget(name: "groove-decode-bench", dependencies: ["Audio"]),
        // The reducer and the MPRIS call handler under libFuzzer (scripts/fuzz builds it with
        // -sanitize=fuzzer,address -DFUZZING); a normal build replays saved inputs. Not installed.
        .executableTarget(name: "groove-bridge-fuzz", dependencies: ["Support", "DBus", "MPRIS", "Mopidy", "Audio", "Bridge"],
                          path: "Fuzz/BridgeFuzz"),

        .testTarget(name: "UnitTests", dependencies: ["Support", "Net", "Mopidy", "DBus", "MPRIS", "Audio", "Bridge"]),
        .testTarget(name: "IntegrationTests", dependencies: ["Support", "Net", "Mopidy", "DBus", "MPRIS", "Audio", "Bridge"]),
    ]
)
