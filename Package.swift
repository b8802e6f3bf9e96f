// swift-tools-version: 6.1
// Meterwise: a network-aware download engine for Linux.
//
//   Links ──▶ Policy ──▶ Engine ◀── Transfer
//     ▲                    ▲
//  NetlinkLinks (libnl)    ├── job store (GRDB), control API (NIO HTTP on a Unix socket)
//  SystemHints (sd-bus:    │
//   NetworkManager)        │
//                          └── MeterwiseClient: the API's JSON shapes and its client (library product)
//
// Only NetlinkLinks imports CNetlink (libnl) and only SystemHints imports CSystemdBus (sd-bus, for
// NetworkManager's hints); every other module builds without them. Every source that blocks (netlink,
// the system bus, inotify, a child's exit) waits on a BlockingIO PollThread.
import PackageDescription

let package = Package(
    name: "meterwise",
    products: [
        .executable(name: "meterwise", targets: ["Meterwise"]),
        /// The checkpointed, resumable ranged downloader, for Swift programs that embed it.
        .library(name: "MeterwiseTransfer", targets: ["Transfer"]),
        /// The daemon's control API for Swift programs: its JSON shapes and a client over the Unix socket.
        .library(name: "MeterwiseClient", targets: ["MeterwiseClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.100.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.0.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.36.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.0.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.0"),
        .package(url: "https://github.com/swiftlang/swift-subprocess.git", from: "1.0.0"),
    ],
    targets: [
        // libnl-3 + libnl-route-3 + libnl-genl-3 (nl80211), with a shim for the macros and variadics Swift
        // cannot call.
        .systemLibrary(
            name: "CNetlink",
            pkgConfig: "libnl-route-3.0",
            providers: [.apt(["libnl-3-dev", "libnl-route-3-dev", "libnl-genl-3-dev"])]
        ),
        // libsystemd's sd-bus, for NetworkManager's view of links (imported by SystemHints only).
        .systemLibrary(
            name: "CSystemdBus",
            pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]
        ),
        // libxml2's pull parser, for Metalink files (imported by Transfer's MetalinkReader only).
        .systemLibrary(
            name: "CLibXML2",
            pkgConfig: "libxml-2.0",
            providers: [.apt(["libxml2-dev"])]
        ),
        // Units (5MiB, 1h30m, 512KiB/s) and strict YAML reading with file:line:column errors.
        .target(
            name: "ConfigKit",
            dependencies: [.product(name: "Yams", package: "Yams")]
        ),
        // A blocking source (a socket, inotify, a process) on a thread of its own, waiting in poll() next to a
        // wake pipe and feeding an AsyncStream: the one primitive every such source uses.
        .target(name: "BlockingIO"),
        // The pure link model, the LinkMonitor protocol and its scenario (simulated) backend.
        .target(
            name: "Links",
            dependencies: ["ConfigKit", .product(name: "Yams", package: "Yams")]
        ),
        // The libnl backend of LinkMonitor, and Wi-Fi SSID/BSSID hints from nl80211: the only module that
        // imports CNetlink.
        .target(
            name: "NetlinkLinks",
            dependencies: [
                "CNetlink", "Links", "ConfigKit", "BlockingIO",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Hints about links from outside the kernel (NetworkManager, UPower over D-Bus, networkd's leases, a
        // captive portal's API): the only module that imports CSystemdBus.
        .target(
            name: "SystemHints",
            dependencies: [
                "CSystemdBus", "Links", "ConfigKit", "BlockingIO",
                .product(name: "Logging", package: "swift-log"),
                // The captive portal API (RFC 8908), asked over https.
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // Policy files and the pure decision function.
        .target(
            name: "Policy",
            dependencies: ["Links", "ConfigKit", .product(name: "Yams", package: "Yams")]
        ),
        // Linux calls Swift cannot make directly: per-thread file-system credentials, faccessat2, renameat2,
        // flock, SO_PEERCRED (Transfer, Engine and the
        // control client only).
        .target(name: "CFileCalls"),
        // CRC-32C with SSE 4.2 / ARMv8 CRC chosen at run time: the partial file's per-chunk checksums (Transfer only).
        .target(name: "CCRC32C"),
        // zsync's block checksums (MD4, the rolling sum) and the seed scan: the hot loop of delta downloads
        // (Transfer only).
        .target(name: "CBlockSums"),
        // The checkpointed ranged downloader (library product MeterwiseTransfer).
        .target(
            name: "Transfer",
            dependencies: [
                "CFileCalls", "CCRC32C", "CBlockSums", "CLibXML2",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // A small HTTP range server with fault injection: the demo's embedded server and the tests' peer.
        .target(
            name: "RangeServer",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The control API's JSON shapes (snake_case) and its client over the Unix socket (which sends nothing
        // before the listener's SO_PEERCRED shows root or the caller).
        .target(
            name: "MeterwiseClient",
            dependencies: [
                "CFileCalls",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
            ]
        ),
        // Network-namespace lab: veth wlan0/wwan0, tc shaping, route toggles (root).
        .target(
            name: "Lab",
            dependencies: ["Links", .product(name: "Subprocess", package: "swift-subprocess")]
        ),
        // Links -> Policy -> Transfer for every job; the job store, budgets, daemon and control API.
        .target(
            name: "Engine",
            dependencies: [
                "Links", "Policy", "Transfer", "MeterwiseClient", "CFileCalls", "BlockingIO", "ConfigKit",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The executable: thin commands over the modules above.
        .executableTarget(
            name: "Meterwise",
            dependencies: [
                "Links", "NetlinkLinks", "SystemHints", "Policy", "Transfer", "RangeServer", "Engine", "Lab",
                "ConfigKit",
                "MeterwiseClient", "CFileCalls", "BlockingIO",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            // Release: linked by lld with packed relative relocations (DT_RELR: 3 MiB of relocations become
            // a few KiB, and the loader touches that much less), without exporting every symbol dynamically
            // (2.4 MiB of symbol tables nobody looks up), and with the functions `get` runs laid out first
            // (packaging/meterwise.order; it takes effect with the function sections of
            // packaging/release-flags.sh). The ordering is an lld option, so it is given here, to the one
            // product linked by lld, and never to every product of a build (gold, which links the others,
            // such as generate-manual, refuses it). See bench/README.md, "download".
            linkerSettings: [
                .unsafeFlags(
                    [
                        "-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs", "-Xlinker",
                        "--no-export-dynamic",
                        "-Xlinker", "--symbol-ordering-file=\(Context.packageDirectory)/packaging/meterwise.order",
                        "-Xlinker", "--no-warn-symbol-ordering",
                    ],
                    .when(platforms: [.linux], configuration: .release))
            ]
        ),
        // Benchmarks (bench/*/run.sh builds them in release and prints a table).
        .executableTarget(
            name: "bench-links", dependencies: ["NetlinkLinks", "Links", "Lab", "TestSupport"], path: "bench/links",
            exclude: ["run.sh"]),
        .executableTarget(
            name: "bench-hints", dependencies: ["TestSupport", "Lab"], path: "bench/hints", exclude: ["run.sh"]),
        .executableTarget(
            name: "bench-soak", dependencies: ["TestSupport", "RangeServer", "MeterwiseClient"], path: "bench/soak",
            exclude: ["run.sh"]),
        .executableTarget(
            name: "bench-policy", dependencies: ["Policy", "Links", "ConfigKit"], path: "bench/policy",
            exclude: ["run.sh"]),

        // Test and bench helpers: manual clock, network-namespace fixtures (VethUplinks), nginx, the range
        // server re-exported. Never linked into the shipped executable.
        .target(
            name: "TestSupport",
            dependencies: [
                "Links", "RangeServer", "Lab", .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),

        .testTarget(
            name: "ConfigKitTests",
            dependencies: ["ConfigKit", .product(name: "PropertyBased", package: "swift-property-based")]),
        .testTarget(name: "BlockingIOTests", dependencies: ["BlockingIO", "TestSupport"]),
        .testTarget(name: "LinksTests", dependencies: ["Links", "ConfigKit", "TestSupport"]),
        .testTarget(
            name: "NetlinkLinksTests",
            dependencies: [
                "NetlinkLinks", "Links", "Lab", "TestSupport", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "SystemHintsTests",
            dependencies: [
                "SystemHints", "Links", "Lab", "TestSupport", .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]),
        .testTarget(
            name: "PolicyTests",
            dependencies: [
                "Policy", "Links", "TestSupport",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "TransferTests",
            dependencies: [
                "Transfer", "RangeServer", "TestSupport", "CBlockSums",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]),
        .testTarget(
            name: "EngineTests",
            dependencies: [
                "Engine", "Links", "Policy", "Transfer", "MeterwiseClient", "TestSupport", "RangeServer", "SystemHints",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        .testTarget(
            name: "CLITests",
            dependencies: [
                "TestSupport", "Transfer", "MeterwiseClient", "Policy", "Links", "Lab", "Engine",
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        .testTarget(name: "LabTests", dependencies: ["Lab", "Links", "TestSupport", "RangeServer"]),
    ]
)
