import FHIR
import Foundation
import Mapping
import Store

/// FHIR input straight to CareKit JSON through the mappings, with no store of the user's: the input is
/// imported into an in-memory store and its current entities written as ``StoreDumper`` writes CareKit
/// JSON (`patients`, `carePlans`, `contacts`, `tasks`, `outcomes`). What `caregate convert --to carekit`
/// and the mapping golden tests run.
public enum CareKitConversion {
    /// The CareKit JSON of `sources`, and the import's report.
    public static func convert(_ sources: [FHIRInput.Source], engine: MappingEngine) throws -> (json: Data, report: ImportReport) {
        let store = try SQLiteStore.inMemory()
        let report = try Importer(store: store, engine: engine, options: ImportOptions(mapping: engine.options)).run(sources)
        var json = Data()
        try StoreDumper(store: store, format: .carekitJSON).dump { json.append($0) }
        return (json, report)
    }
}
