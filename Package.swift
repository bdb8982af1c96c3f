// swift-tools-version: 6.2
import PackageDescription

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
]

/// `scripts/fuzz` sets HP_FUZZ=1 and builds only `hp-fuzz`: the modules that parse
/// untrusted input get libFuzzer's coverage instrumentation (docs/fuzzing.md).
let fuzzing = Context.environment["HP_FUZZ"] == "1"
let fuzzed: [SwiftSetting] = strict + (fuzzing ? [.unsafeFlags(["-sanitize=fuzzer"])] : [])

/// What both sides of sync build on: the archive, the protocol, NIO with TLS.
let syncSide: [Target.Dependency] = [
    "HealthProbeCanonical", "HealthProbeArchive", "HealthProbeProtocol",
    .product(name: "GRDB", package: "GRDB.swift"),
    .product(name: "NIOCore", package: "swift-nio"),
    .product(name: "NIOPosix", package: "swift-nio"),
    .product(name: "NIOSSL", package: "swift-nio-ssl"),
]

let package = Package(
    name: "HealthProbe",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "HealthProbeCanonical", targets: ["HealthProbeCanonical"]),
        .library(name: "HealthProbeArchive", targets: ["HealthProbeArchive"]),
        .library(name: "HealthProbeSimulator", targets: ["HealthProbeSimulator"]),
        .executable(name: "hp-node", targets: ["HPNode"]),
        .executable(name: "hp-server", targets: ["HPServer"]),
        .executable(name: "hp-bench", targets: ["HPBench"]),
        .executable(name: "hp-fuzz", targets: ["HPFuzz"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/weichsel/ZIPFoundation", from: "0.9.20"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // The web layer. Default traits off: no swift-configuration build for a feature we do not use.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth", from: "2.5.0"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        // Alert delivery: webhook and ntfy publishes.
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
    ],
    targets: [
        .target(
            name: "HPSQLiteConfig",
            linkerSettings: [.linkedLibrary("sqlite3")]
        ),
        .target(name: "HPFileSync"),
        // Canonical JSON (RFC 8785), canonical dates, domain-separated hashing: the bottom layer.
        .target(
            name: "HealthProbeCanonical",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: fuzzed
        ),
        .target(
            name: "HealthProbeArchive",
            dependencies: [
                "HealthProbeCanonical",
                "HPSQLiteConfig",
                "HPFileSync",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: fuzzed
        ),
        .target(
            name: "HealthProbeSimulator",
            dependencies: ["HealthProbeCanonical", "HealthProbeArchive", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "Logging", package: "swift-log"),
                           .product(name: "ZIPFoundation", package: "ZIPFoundation")],
            swiftSettings: strict
        ),
        .systemLibrary(
            name: "HPLibXML2",
            pkgConfig: "libxml-2.0",
            providers: [.apt(["libxml2-dev"])]
        ),
        .target(
            name: "HealthProbeImport",
            dependencies: [
                "HealthProbeCanonical", "HealthProbeArchive",
                "HPLibXML2",
                "HPZlib",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: fuzzed
        ),
        .systemLibrary(
            name: "HPZlib",
            providers: [.apt(["libz-dev"])]
        ),
        .systemLibrary(
            name: "HPDeflate",
            providers: [.apt(["libdeflate-dev"])]
        ),
        // The wire protocol both sides share: frames, hello, typed messages, limits, part codec.
        .target(
            name: "HealthProbeProtocol",
            dependencies: [
                "HealthProbeCanonical",
                "HPZlib",
                .target(name: "HPDeflate", condition: .when(platforms: [.linux])),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: fuzzed
        ),
        // The device side: outbox bundles, the pinned-TLS client, sync, enrollment.
        .target(
            name: "HealthProbeNode",
            dependencies: syncSide + [.product(name: "Logging", package: "swift-log"), .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict
        ),
        // The node's hands-off capture: the Health Auto Export ingest endpoint (HTTPS), the
        // watched folder, and syncing after each new observation (`hp-node serve`).
        .target(
            name: "HealthProbeIngest",
            dependencies: syncSide + [
                "HealthProbeImport", "HealthProbeNode",
                .product(name: "_NIOFileSystem", package: "swift-nio"),
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        // The household server: sessions, store, registry, apply queue, verifier, summaries, metrics.
        .target(
            name: "HealthProbeServer",
            dependencies: syncSide + [
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: fuzzed
        ),
        // The web layer on the server: the household's dashboard and its JSON API over HTTPS.
        .target(
            name: "HealthProbeWeb",
            dependencies: [
                "HealthProbeCanonical", "HealthProbeArchive", "HealthProbeProtocol", "HealthProbeServer",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HummingbirdAuth", package: "hummingbird-auth"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ZIPFoundation", package: "ZIPFoundation"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "HealthProbeCLI",
            dependencies: ["HealthProbeCanonical", "HealthProbeArchive", "HealthProbeProtocol", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "HPNode",
            dependencies: [
                "HealthProbeCanonical", "HealthProbeArchive",
                "HealthProbeSimulator",
                "HealthProbeImport",
                "HealthProbeProtocol",
                "HealthProbeNode",
                "HealthProbeIngest",
                "HealthProbeCLI",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            path: "Sources/hp-node",
            swiftSettings: strict
        ),
        .executableTarget(
            name: "HPServer",
            dependencies: [
                "HealthProbeCanonical", "HealthProbeArchive",
                "HealthProbeProtocol",
                "HealthProbeServer",
                "HealthProbeWeb",
                "HealthProbeCLI",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/hp-server",
            swiftSettings: strict
        ),
        .executableTarget(
            name: "HPBench",
            dependencies: [
                "HealthProbeCanonical", "HealthProbeArchive",
                "HealthProbeSimulator",
                "HealthProbeImport",
                "HealthProbeProtocol",
                "HealthProbeNode",
                "HealthProbeIngest",
                "HealthProbeServer",
                "HealthProbeCLI",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            path: "Sources/hp-bench",
            swiftSettings: strict
        ),
        // Fuzz targets over the decoders, the verifier and verify-then-apply (docs/fuzzing.md).
        .target(
            name: "HealthProbeFuzz",
            dependencies: [
                "HealthProbeCanonical",
                "HealthProbeArchive",
                "HealthProbeProtocol",
                "HealthProbeServer",
                "HealthProbeCLI",
                "HealthProbeImport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: fuzzed
        ),
        .executableTarget(
            name: "HPFuzz",
            dependencies: ["HealthProbeFuzz", "HealthProbeArchive"],
            path: "Sources/hp-fuzz",
            swiftSettings: strict + (fuzzing ? [.define("HP_FUZZ"), .unsafeFlags(["-sanitize=fuzzer"])] : []),
            linkerSettings: fuzzing ? [.unsafeFlags(["-sanitize=fuzzer", "-use-ld=lld"])] : []
        ),
        // Helpers every test target may use, on the canonical layer alone (repository files,
        // vectors, seeded randomness, running the CLIs): the canonical tests build no SQLite.
        .target(
            name: "HealthProbeTestBasics",
            dependencies: ["HealthProbeCanonical"],
            path: "Tests/HealthProbeTestBasics",
            swiftSettings: strict
        ),
        // Helpers of the archive layer and above (temporary homes and archives, bundles, real
        // servers); re-exports HealthProbeTestBasics.
        .target(
            name: "HealthProbeTestSupport",
            dependencies: ["HealthProbeTestBasics", "HealthProbeCanonical", "HealthProbeArchive", "HealthProbeSimulator", "HealthProbeImport",
                           .product(name: "GRDB", package: "GRDB.swift"), .product(name: "X509", package: "swift-certificates"),
                           .product(name: "SwiftASN1", package: "swift-asn1"), .product(name: "Crypto", package: "swift-crypto"),
                           .product(name: "ZIPFoundation", package: "ZIPFoundation")],
            path: "Tests/HealthProbeTestSupport",
            swiftSettings: strict
        ),
        .testTarget(
            name: "HealthProbeCanonicalTests",
            dependencies: ["HealthProbeCanonical", "HealthProbeTestBasics"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "HealthProbeArchiveTests",
            dependencies: ["HealthProbeCanonical", "HealthProbeArchive", "HealthProbeSimulator", "HealthProbeImport", "HealthProbeTestSupport",
                           .product(name: "GRDB", package: "GRDB.swift"), .product(name: "GRDBSQLite", package: "GRDB.swift")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "HealthProbeSimulatorTests",
            dependencies: ["HealthProbeSimulator", "HealthProbeCanonical", "HealthProbeArchive", "HealthProbeTestSupport", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "HealthProbeImportTests",
            dependencies: ["HealthProbeImport", "HealthProbeCanonical", "HealthProbeArchive", "HealthProbeSimulator", "HealthProbeTestSupport",
                           .product(name: "GRDB", package: "GRDB.swift"), .product(name: "ZIPFoundation", package: "ZIPFoundation")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "HealthProbeProtocolTests",
            dependencies: ["HealthProbeProtocol", "HealthProbeCanonical", "HealthProbeTestSupport",
                           .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"),
                           .product(name: "NIOTestUtils", package: "swift-nio")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "HealthProbeNodeTests",
            dependencies: ["HealthProbeNode", "HealthProbeProtocol", "HealthProbeCanonical", "HealthProbeArchive", "HealthProbeSimulator",
                           "HealthProbeTestSupport", .product(name: "GRDB", package: "GRDB.swift"),
                           .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio")],
            swiftSettings: strict
        ),
        // The server's tests talk to it with the real node client over real TLS (and run the
        // built hp-node against a hostile server).
        .testTarget(
            name: "HealthProbeServerTests",
            dependencies: ["HealthProbeServer", "HealthProbeNode", "HPNode", "HealthProbeProtocol", "HealthProbeCanonical", "HealthProbeArchive",
                           "HealthProbeSimulator", "HealthProbeTestSupport",
                           .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"),
                           .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOTestUtils", package: "swift-nio"),
                           .product(name: "NIOConcurrencyHelpers", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
                           .product(name: "GRDB", package: "GRDB.swift"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
                           .product(name: "AsyncHTTPClient", package: "async-http-client")],
            swiftSettings: strict
        ),
        // The web layer's tests: a real server over real TLS on 127.0.0.1, real replicas.
        .testTarget(
            name: "HealthProbeWebTests",
            dependencies: [.product(name: "ZIPFoundation", package: "ZIPFoundation"), .product(name: "Mustache", package: "swift-mustache"), "HealthProbeWeb", "HealthProbeServer", "HealthProbeImport", "HealthProbeNode", "HealthProbeProtocol", "HealthProbeCanonical", "HealthProbeArchive",
                           "HealthProbeSimulator", "HealthProbeTestSupport",
                           .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                           .product(name: "NIOSSL", package: "swift-nio-ssl"), .product(name: "GRDB", package: "GRDB.swift"),
                           .product(name: "Logging", package: "swift-log"), .product(name: "NIOEmbedded", package: "swift-nio"),
                           .product(name: "NIOHTTPTypes", package: "swift-nio-extras"), .product(name: "HTTPTypes", package: "swift-http-types"),
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                           .product(name: "Hummingbird", package: "hummingbird"), .product(name: "HummingbirdTesting", package: "hummingbird")],
            swiftSettings: strict
        ),
        // Ingest over real HTTPS on 127.0.0.1 (async-http-client), ending on a real server.
        .testTarget(
            name: "HealthProbeIngestTests",
            dependencies: ["HealthProbeIngest", "HealthProbeImport", "HealthProbeNode", "HealthProbeServer", "HealthProbeProtocol", "HealthProbeCanonical",
                           "HealthProbeArchive", "HealthProbeSimulator", "HealthProbeTestSupport", "HPNode",
                           .product(name: "ZIPFoundation", package: "ZIPFoundation"),
                           .product(name: "AsyncHTTPClient", package: "async-http-client"), .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "NIOSSL", package: "swift-nio-ssl"), .product(name: "NIOPosix", package: "swift-nio"),
                           .product(name: "Logging", package: "swift-log"), .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "HealthProbeFuzzTests",
            dependencies: ["HealthProbeFuzz", "HealthProbeTestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "HealthProbeCLITests",
            dependencies: ["HealthProbeCLI", "HealthProbeProtocol", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strict
        ),
        // The CLI tests run the built tools: depending on them makes SwiftPM build them beside the tests.
        .testTarget(
            name: "HPNodeTests",
            dependencies: ["HPNode", "HPServer", "HealthProbeCanonical", "HealthProbeArchive", "HealthProbeSimulator", "HealthProbeTestSupport",
                           .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "HPServerTests",
            dependencies: ["HPServer", "HPNode", "HealthProbeServer", "HealthProbeCanonical", "HealthProbeArchive", "HealthProbeTestSupport", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
    ]
)
