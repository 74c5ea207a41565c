// swift-tools-version:6.0
import PackageDescription

// Module layout follows ../shared/DESIGN.md: data flows FHIR -> Mapping -> CareModel -> Store -> Sync,
// and a lower module never imports a higher one.
let package = Package(
    name: "CareGate",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "caregate", targets: ["caregate"]),
        .library(name: "FHIR", targets: ["FHIR"]),
        .library(name: "CareModel", targets: ["CareModel"]),
        .library(name: "Store", targets: ["Store"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    ],
    targets: [
        // libxml2 is used only as a tokenizer with entity expansion and network access switched off.
        .systemLibrary(
            name: "CLibXML2",
            path: "Sources/CLibXML2",
            pkgConfig: "libxml-2.0",
            providers: [.apt(["libxml2-dev"])]
        ),
        .target(name: "FHIR", dependencies: ["CLibXML2"]),
        .target(name: "CareModel"),
        .target(
            name: "Store",
            dependencies: [
                "CareModel", .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's C API, which GRDB vends, for the statements run once per outcome row.
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ]
        ),
        .executableTarget(
            name: "caregate",
            dependencies: [
                "FHIR", "CareModel", "Store",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Test-only helpers shared by the test targets (corpus location, CLI runner).
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "FHIRTests", dependencies: ["FHIR", "TestSupport"], exclude: ["FHIRPathKnownFailures.md"]),
        .testTarget(name: "CareModelTests", dependencies: ["CareModel", "TestSupport"]),
        .testTarget(
            name: "StoreTests",
            dependencies: ["Store", "CareModel", "TestSupport", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        .testTarget(name: "CLITests", dependencies: ["caregate", "TestSupport"]),
    ]
)
