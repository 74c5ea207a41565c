// swift-tools-version:6.0
import PackageDescription

// Module layout follows ../shared/DESIGN.md: data flows FHIRCore -> FHIRPath -> FHIRValidation, and
// FHIR -> Mapping -> CareModel -> Store -> Pipeline -> Sync; a lower module never imports a higher one.
let package = Package(
    name: "CareGate",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "caregate", targets: ["caregate"]),
        .executable(name: "caregate-example-app", targets: ["caregate-example-app"]),
        .executable(name: "caregate-bench", targets: ["caregate-bench"]),
        // One import for the whole FHIR layer (core, FHIRPath, validation), re-exported.
        .library(name: "FHIR", targets: ["FHIR"]),
        .library(name: "FHIRCore", targets: ["FHIRCore"]),
        .library(name: "FHIRPath", targets: ["FHIRPath"]),
        .library(name: "FHIRValidation", targets: ["FHIRValidation"]),
        .library(name: "CareModel", targets: ["CareModel"]),
        .library(name: "Surveys", targets: ["Surveys"]),
        .library(name: "Store", targets: ["Store"]),
        .library(name: "PostgresStore", targets: ["PostgresStore"]),
        .library(name: "Mapping", targets: ["Mapping"]),
        .library(name: "Pipeline", targets: ["Pipeline"]),
        .library(name: "Insights", targets: ["Insights"]),
        .library(name: "AppServer", targets: ["AppServer"]),
        .library(name: "AppClient", targets: ["AppClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.0.0"),
        // swift-crypto 4: jwt-kit 5.7 and later need it.
        .package(url: "https://github.com/apple/swift-crypto", from: "4.0.0"),
        // JWT, JWS and JWK (issue 42): CareGate's tokens, SMART issuer tokens and the SMART Backend Services
        // client assertion, behind CareGate's own rules (AppServer/Auth/SignedToken.swift).
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.7.1"),
        // jwt-kit's base64url, for the one base64url CareGate writes itself (the server key's id).
        .package(url: "https://github.com/swift-extras/swift-extras-base64", from: "1.2.0"),
        // The app server (issue 29): HTTP/1.1 on SwiftNIO, with in-memory and live route tests.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        // `caregate serve` stops gracefully on SIGTERM in a service group of its own, telling systemd
        // it stops (Hummingbird runs on it already).
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        // Metrics an operator scrapes (issue 48): recorded through swift-metrics into swift-prometheus.
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.1.0"),
        // Hummingbird logs through swift-log; the app server sets its level.
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // `swift package generate-documentation` for the DocC catalogs (Scripts/build-docs.sh).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // Reading FHIR servers and issuers with every answer bounded in memory, for real (issue 41):
        // its collectors close the connection at the limit, where URLSession on Linux read on.
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // SwiftNIO's own modules, which the server's connection limits and the bounded client use directly
        // (Hummingbird and AsyncHTTPClient are built on them).
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        // The PostgreSQL store (issue 47): the wire protocol, SCRAM, TLS and a connection pool.
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
    ],
    targets: [
        // libxml2 is used only as a tokenizer with entity expansion and network access switched off.
        .systemLibrary(
            name: "CLibXML2",
            path: "Sources/CLibXML2",
            pkgConfig: "libxml-2.0",
            providers: [.apt(["libxml2-dev"])]
        ),
        // glibc's mallopt, for the heap tuning of the command lines (CommandSupport.HeapTuning).
        .systemLibrary(name: "CGlibcMalloc", path: "Sources/CGlibcMalloc"),
        // The one shape of errors a user can cause (message, location, exit status), adopted by every
        // library error and rendered one way by the command line.
        .target(name: "Diagnostics"),
        // Files only their owner may read (0600, folders 0700, whatever the umask) and secrets read only
        // from such files in folders no one else may write (the server's key).
        .target(name: "FileSafety", dependencies: ["Diagnostics"]),
        // R4 metadata, the element model, JSON and XML codecs, reading input (files, folders, NDJSON).
        .target(name: "FHIRCore", dependencies: ["CLibXML2", "Diagnostics"]),
        // The FHIRPath language (N1) over the element model.
        .target(name: "FHIRPath", dependencies: ["FHIRCore"]),
        // Structural validation and the R4 invariants (evaluated with FHIRPath).
        .target(name: "FHIRValidation", dependencies: ["FHIRCore", "FHIRPath", .product(name: "Crypto", package: "swift-crypto")]),
        // Re-exports the three FHIR layers.
        .target(name: "FHIR", dependencies: ["FHIRCore", "FHIRPath", "FHIRValidation"]),
        // The official FHIRPath test-suite runner behind `caregate conformance fhirpath`.
        .target(name: "FHIRPathConformance", dependencies: ["FHIRCore", "FHIRPath", "CLibXML2"]),
        // SHA-256 (content hashes) from swift-crypto: BoringSSL's, which uses the CPU's SHA instructions.
        .target(name: "CareModel", dependencies: ["Diagnostics", .product(name: "Crypto", package: "swift-crypto")]),
        // Questionnaires (issue 44): the model read from FHIR, an app's answers checked against it, the
        // QuestionnaireResponse, scores and extracted Observations built from them, and a response
        // validated against its Questionnaire. Pure: no store, no pipeline.
        .target(name: "Surveys", dependencies: ["FHIR", "CareModel"]),
        .target(
            name: "Store",
            dependencies: [
                "CareModel", "FileSafety", .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's C API, which GRDB vends, for the statements run once per outcome row.
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ]
        ),
        // The PostgreSQL store (issue 47), on postgres-nio: its connection (PostgresLocation: TLS per sslmode,
        // the password never shown) and its own migrations. Not yet a `Store`: Docs/postgresql.md says what exists.
        .target(name: "PostgresStore", dependencies: [
            "Store", .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // Mapping files (YAML): loading, static checks, and running FHIR -> care entities. No store, no I/O
        // beyond reading mapping files.
        // The default mapping files (Mappings/, linked in as Sources/Mapping/Defaults) compiled into the
        // binary, so that a `caregate` copied alone has them; an edited file takes effect at the next build.
        .target(
            // Crypto: the SHA-1 of a file result's attachment (R4 Attachment.hash).
            name: "Mapping", dependencies: ["FHIR", "CareModel", .product(name: "Yams", package: "Yams"), .product(name: "Crypto", package: "swift-crypto")],
            exclude: ["Defaults/README.md", "Defaults/mapping.schema.json"],
            resources: [
                .embedInCode("Defaults/ActiveTaskExport.yaml"),
                .embedInCode("Defaults/CarePlan.yaml"),
                .embedInCode("Defaults/MedicationRequest.yaml"),
                .embedInCode("Defaults/Observation.yaml"),
                .embedInCode("Defaults/ObservationExport.yaml"),
                .embedInCode("Defaults/Patient.yaml"),
                .embedInCode("Defaults/QuestionnaireResponse.yaml"),
                .embedInCode("Defaults/RelatedPerson.yaml"),
                .embedInCode("Defaults/ServiceRequest.yaml"),
                .embedInCode("Defaults/healthkit.yaml"),
                .embedInCode("Defaults/Task.yaml"),
                .embedInCode("Defaults/insights.yaml"),
            ]
        ),
        // Adherence (CareKit's rules), measurements, threshold rules and the care-team report (HTML with
        // inline SVG, PDF through headless Chromium, a FHIR DocumentReference). Pure over care-model values:
        // no store; the caller reads it.
        .target(name: "Insights", dependencies: [
            "CareModel", "FHIR", "Mapping", "FileSafety", .product(name: "Yams", package: "Yams"), .product(name: "Crypto", package: "swift-crypto"),
        ]),
        // The import job: FHIR input -> Mapping -> Store (through its protocol), with reports and dead letters.
        // Yams: the consent terms file; Crypto: the SHA-1 of a signed consent's PDF or a shared document
        // (R4 Attachment.hash).
        .target(name: "Pipeline", dependencies: [
            "FHIR", "CareModel", "Mapping", "Store", "Insights", "Surveys",
            .product(name: "Yams", package: "Yams"), .product(name: "Crypto", package: "swift-crypto"),
        ]),
        // The FHIR REST client and the sync job: pull from and push to a server (or a folder).
        .target(name: "Sync", dependencies: [
            "FHIR", "CareModel", "Store", "Mapping", "Pipeline", "Insights", "Observability",
            // JWT client assertions for SMART Backend Services: ES384 (P-384) and RS384 (RSA).
            .product(name: "Crypto", package: "swift-crypto"), .product(name: "_CryptoExtras", package: "swift-crypto"),
            .product(name: "JWTKit", package: "jwt-kit"),
            .product(name: "Yams", package: "Yams"),
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            .product(name: "NIOHTTPCompression", package: "swift-nio-extras"),
        ]),
        // The patient-app side: CareKit's remote sync over HTTP (Hummingbird 2), per-patient ES256 tokens,
        // the audit trail. It reads and writes the store through its protocol, never the FHIR client.
        .target(name: "AppServer", dependencies: [
            "Observability", "CareModel", "Store", "Insights", "Pipeline", "Mapping", "FileSafety", "FHIRCore",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            // The server's P-256 key (Crypto); its tokens and a SMART issuer's (`serve --issuer`) through jwt-kit.
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "JWTKit", package: "jwt-kit"), .product(name: "ExtrasBase64", package: "swift-extras-base64"),
            // The issuer's discovery document and key set, read within their limits (BoundedFetch).
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
            .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
        ],
            // Docs/openapi.json (linked in as Resources/openapi.json), served at GET /openapi.json.
            resources: [.embedInCode("Resources/openapi.json")]
        ),
        // A platform-neutral client of the app server (URLSession, CareKit-shaped Codable types), for app
        // developers and the tests.
        .target(name: "AppClient", dependencies: ["CareModel"]),
        // A patient's app from the command line, on AppClient: the README's first command runs it.
        .executableTarget(
            name: "caregate-example-app",
            dependencies: ["AppClient", "CareModel", .product(name: "ArgumentParser", package: "swift-argument-parser")]),
        // Synthetic care data of a chosen size, for `caregate store generate`, the benchmarks and tests.
        .target(name: "SyntheticData", dependencies: ["CareModel", "Store"]),
        // What the two command lines share: the one place errors become messages and exit statuses, and
        // the checks of inputs every command makes alike.
        // Metrics of the server and the sync job, in a Prometheus registry of their own (`/metrics`).
        .target(name: "Observability", dependencies: [
            "Store", .product(name: "CoreMetrics", package: "swift-metrics"), .product(name: "Prometheus", package: "swift-prometheus"),
        ]),
        .target(name: "CommandSupport", dependencies: [
            "FHIRCore", "Mapping", "CGlibcMalloc", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The benchmarks' measurements (parse, FHIRPath, store, import, export, validation), for the
        // `caregate-bench` executable and the tests of their helpers.
        .target(
            name: "Benchmarks",
            dependencies: ["FHIR", "CareModel", "Store", "Mapping", "Pipeline", "SyntheticData", "PostgresStore", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Benchmarks/Harness"
        ),
        // `caregate-bench`: the benchmarks as commands, outside the production binary (swift-nio's
        // NIOPerformanceTester is the model). `import-ndjson` runs the `caregate` built beside it.
        .executableTarget(
            name: "caregate-bench",
            dependencies: ["Benchmarks", "CommandSupport", "FHIR", "Pipeline", "Store", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Benchmarks/Runner"
        ),
        .executableTarget(
            name: "caregate",
            dependencies: [
                "FHIR", "FHIRPathConformance", "CareModel", "Store", "Mapping", "Pipeline", "Sync", "SyntheticData",
                "Insights", "AppServer", "CommandSupport", "Surveys", "Observability", "PostgresStore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Test-only helpers shared by the test targets (corpus location, CLI runner).
        .target(name: "TestSupport", dependencies: ["Store", "CareModel", "Mapping"], path: "Tests/TestSupport"),
        // Runs a store-neutral test on SQLite and on PostgreSQL (one private server per test process).
        .target(name: "StoreTestSupport", dependencies: ["Store", "PostgresStore", "TestSupport"], path: "Tests/StoreTestSupport"),
        // A CareKit device's store and its `synchronize()`, step by step, for the app sync tests in memory
        // (AppServerTests) and against `caregate serve` and a FHIR server (SyncTests).
        .target(name: "DeviceSimulation", dependencies: ["CareModel"], path: "Tests/DeviceSimulation"),
        .testTarget(
            name: "FHIRTests",
            dependencies: ["FHIR", "FHIRCore", "FHIRPath", "FHIRValidation", "FHIRPathConformance", "Diagnostics", "TestSupport"],
            exclude: ["FHIRPathKnownFailures.md", "FuzzRegressions"]
        ),
        .testTarget(name: "CareModelTests", dependencies: ["CareModel", "TestSupport"]),
        .testTarget(name: "SurveysTests", dependencies: ["Surveys", "FHIR", "CareModel", "TestSupport"]),
        .testTarget(
            name: "StoreTests",
            dependencies: ["Store", "CareModel", "SyntheticData", "TestSupport", "StoreTestSupport", "PostgresStore", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        .testTarget(name: "PostgresStoreTests", dependencies: ["PostgresStore", "Store", "CareModel", "TestSupport", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "PostgresNIO", package: "postgres-nio"), .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "MappingTests", dependencies: ["Mapping", "FHIR", "CareModel", "TestSupport"]),
        .testTarget(name: "PipelineTests", dependencies: ["Pipeline", "Insights", "Mapping", "Store", "FHIR", "CareModel", "Benchmarks", "TestSupport"]),
        .testTarget(name: "SyncTests", dependencies: [
            "Sync", "Pipeline", "PostgresStore", "StoreTestSupport", "Insights", "Mapping", "Store", "CareModel", "FHIR", "TestSupport", "AppClient", "DeviceSimulation", "Benchmarks",
            .product(name: "Crypto", package: "swift-crypto"), .product(name: "_CryptoExtras", package: "swift-crypto"),
            .product(name: "JWTKit", package: "jwt-kit"),
        ]),
        .testTarget(name: "InsightsTests", dependencies: ["Insights", "CareModel", "FHIR", "TestSupport"]),
        .testTarget(name: "AppServerTests", dependencies: [
            "AppServer", "AppClient", "Store", "CareModel", "TestSupport", "Benchmarks", "DeviceSimulation", "Pipeline", "FHIRCore", "PostgresStore", "StoreTestSupport",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdTesting", package: "hummingbird"),
            .product(name: "Crypto", package: "swift-crypto"), .product(name: "_CryptoExtras", package: "swift-crypto"),
        ]),
        .testTarget(name: "CLITests", dependencies: ["caregate", "CommandSupport", "TestSupport", "Store", "CareModel", "FHIR", "Mapping", "Insights", "Pipeline"]),
    ]
)

// libFuzzer targets (Fuzz/), built only by Scripts/fuzz.sh (CAREGATE_FUZZ=1): they need the sanitizer
// flags, and a normal build or test run should not compile them.
if Context.environment["CAREGATE_FUZZ"] == "1" {
    let fuzzTargets: [(String, [Target.Dependency])] = [
        ("FuzzJSON", ["FHIR"]),
        ("FuzzXML", ["FHIR"]),
        ("FuzzFHIRPath", ["FHIR"]),
        ("FuzzUCUM", ["FHIR"]),
        ("FuzzValidation", ["FHIR"]),
        ("FuzzSchedule", ["CareModel"]),
        ("FuzzTiming", ["Mapping", "FHIR"]),
        ("FuzzMappingLoader", ["Mapping"]),
        ("FuzzImport", ["Pipeline", "Mapping", "Store", "FHIR"]),
    ]
    package.targets.append(.target(name: "FuzzSupport", path: "Fuzz/FuzzSupport"))
    for (name, dependencies) in fuzzTargets {
        package.targets.append(.executableTarget(name: name, dependencies: dependencies + ["FuzzSupport"], path: "Fuzz/\(name)"))
    }
}
