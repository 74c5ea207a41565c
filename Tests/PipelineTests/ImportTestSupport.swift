import FHIR
import Foundation
import Mapping
import Pipeline
import Store
import XCTest

extension XCTestCase {
    /// A new SQLite store in a scratch folder.
    func makeStore() throws -> SQLiteStore {
        let folder = try makeScratchFolder("import")
        return try SQLiteStore(path: folder.appendingPathComponent("store.sqlite").path)
    }

    /// Imports `paths` into `store` with the default mappings (or `mappings` layered over them).
    func importFiles(
        _ paths: [String], into store: any Store, zone: String = "UTC", mappings: String? = nil, outcomeBatchSize: Int? = nil,
        entityChunkSize: Int? = nil, holdInputUpTo: Int? = nil, runDate: Date? = nil
    ) throws -> ImportReport {
        let gateway = Gateway(
            store: store, mappings: try MappingSet.defaults(overriddenBy: mappings), options: Gateway.Options(timeZone: TimeZone(identifier: zone)!))
        let importer = try gateway.importer { options in
            if let outcomeBatchSize { options.outcomeBatchSize = outcomeBatchSize }
            if let entityChunkSize { options.entityChunkSize = entityChunkSize }
            if let holdInputUpTo { options.holdInputUpTo = holdInputUpTo }
            if let runDate { options.mapping.runDate = runDate }
        }
        return try importer.run(FHIRInput.sources(for: paths))
    }
}

/// The failures of a report, one line each, for assertion messages.
func describe(_ failures: [ImportReport.Failure]) -> String {
    failures.prefix(20).map { "\($0.source) \($0.resource ?? "") \($0.path ?? ""): \($0.message)" }.joined(separator: "\n")
}
