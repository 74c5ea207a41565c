import CareModel
import FHIR
import Foundation
import Mapping
import Store

/// FHIR input straight to care entities through the mappings, with no store of the user's: the input is
/// imported by a ``Gateway`` over an in-memory store (`mappings` and `options` as for any job) and its
/// current entities written out.
public enum CareKitConversion {
    /// The CareKit 4.0 JSON of `sources`, as `store dump --format carekit-json` writes it (one object per
    /// patient, one per line; `StoreDumper`), and the import's report: what
    /// `caregate convert --to carekit` writes.
    public static func careKitJSON(
        _ sources: [FHIRInput.Source], mappings: MappingSet, options: Gateway.Options
    ) throws -> (json: Data, report: ImportReport) {
        let (store, report) = try imported(sources, mappings: mappings, options: options)
        var json = Data()
        try StoreDumper(store: store, format: .carekitJSON, taskPatient: taskPatient).dump { json.append($0) }
        return (json, report)
    }

    /// The entities of `sources` as CareGate stores them (`StoreDumper/dumpStoredShape(to:)`: `patients`,
    /// `carePlans`, `contacts`, `tasks`, `outcomes`, linked by stable id), and the import's report: what
    /// the mapping golden tests compare, so that expected files name entities by their stable ids and do
    /// not change with the app wire shape.
    public static func convert(
        _ sources: [FHIRInput.Source], mappings: MappingSet, options: Gateway.Options
    ) throws -> (json: Data, report: ImportReport) {
        let (store, report) = try imported(sources, mappings: mappings, options: options)
        var json = Data()
        try StoreDumper(store: store, format: .carekitJSON).dumpStoredShape { json.append($0) }
        return (json, report)
    }

    /// The patient of a task without a care plan, as the mappings note it (`FHIRLinkage/patientID`): what
    /// `StoreDumper` groups such tasks (log tasks) by.
    public static let taskPatient: @Sendable (CareTask) -> String? = { $0.metadata.linkage.patientID }

    private static func imported(_ sources: [FHIRInput.Source], mappings: MappingSet, options: Gateway.Options) throws -> (any Store, ImportReport) {
        let gateway = Gateway(store: try SQLiteStore.inMemory(), mappings: mappings, options: options)
        return (gateway.store, try gateway.importFHIR(sources))
    }
}
