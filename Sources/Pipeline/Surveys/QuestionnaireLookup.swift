import FHIR
import Foundation

/// Where an import looks for a Questionnaire a survey task asks that neither its input nor the store
/// holds: the FHIR server of a sync (`Questionnaire?url=...&version=...`), a folder of the sync
/// configuration. What it finds is kept in the store, so it is asked once.
public protocol QuestionnaireLookup: Sendable {
    /// The Questionnaires that `canonical` names (any version of its url when it has none); empty when
    /// there are none. Throws only what should stop the import (never "not found").
    func questionnaires(for canonical: QuestionnaireIdentity.Canonical) throws -> [Element]
}

/// The Questionnaires of a folder's files (JSON, XML, Bundles, NDJSON), read once and found by url.
public final class QuestionnaireFolder: QuestionnaireLookup, @unchecked Sendable {
    private let byURL: [String: [Element]]
    private let byID: [String: [Element]]
    /// Files of the folder that could not be read, with why (reported, never fatal).
    public let problems: [String]

    /// Reads every Questionnaire of `path` (a folder or one file).
    public init(path: String) {
        var byURL: [String: [Element]] = [:]
        var byID: [String: [Element]] = [:]
        var problems: [String] = []
        for source in FHIRInput.sources(for: [path]) {
            do {
                try FHIRInput.forEachEntry(of: source) { entry, _ in
                    switch entry.result {
                    case .success(let resource):
                        // A Bundle's entries, else the resource itself.
                        let resources = resource.resourceType == "Bundle"
                            ? resource.children(named: "entry").compactMap { $0.child(named: "resource") } : [resource]
                        for resource in resources where resource.resourceType == "Questionnaire" {
                            if let id = resource.childValue("id"), !id.isEmpty { byID[id, default: []].append(resource) }
                            guard let url = resource.childValue("url"), !url.isEmpty else { continue }
                            byURL[url, default: []].append(resource)
                        }
                    case .failure(let error):
                        problems.append("\(source): \(error.message)")
                    }
                }
            } catch {
                problems.append("\(source): \(error)")
            }
        }
        self.byURL = byURL
        self.byID = byID
        self.problems = problems
    }

    public func questionnaires(for canonical: QuestionnaireIdentity.Canonical) throws -> [Element] {
        if let id = canonical.referencedID { return questionnaires(id: id) }
        let all = byURL[canonical.url] ?? []
        guard let version = canonical.version else { return all }
        return all.filter { $0.childValue("version") == version }
    }

    /// The Questionnaires of the folder with FHIR id `id`.
    public func questionnaires(id: String) -> [Element] { byID[id] ?? [] }

    /// How many Questionnaires the folder holds.
    public var count: Int { byURL.values.reduce(0) { $0 + $1.count } }
}
