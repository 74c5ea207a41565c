import FHIR
import Foundation
import Pipeline

/// The sync job's ``QuestionnaireLookup``: a Questionnaire a survey task asks that neither the pulled
/// pages nor the store hold is searched on the server (`Questionnaire?url=...&version=...`, or
/// `Questionnaire?_id=...` for a `Questionnaire/<id>` reference), after the configuration's
/// `questionnaires:` folder. The import keeps what is found, so each is pulled once.
///
/// A search that fails (the server refuses, the network) is the import's warning, not the run's end: the
/// task is made all the same and asks again at the next run.
final class ServerQuestionnaires: QuestionnaireLookup, @unchecked Sendable {
    /// The most Questionnaires one canonical may bring (the versions of one url).
    static let maximumFound = 50

    private let client: FHIRClient?
    private let folders: [QuestionnaireFolder]

    /// Searches `client` (nil: a folder stands for the server) after `folders`.
    init(client: FHIRClient?, folders: [QuestionnaireFolder]) {
        self.client = client
        self.folders = folders
    }

    func questionnaires(for canonical: QuestionnaireIdentity.Canonical) throws -> [Element] {
        if let id = canonical.referencedID {
            for folder in folders {
                let found = folder.questionnaires(id: id)
                if !found.isEmpty { return found }
            }
            return try search([("_id", id)])
        }
        for folder in folders {
            let found = try folder.questionnaires(for: canonical)
            if !found.isEmpty { return found }
        }
        var parameters = [("url", canonical.url)]
        if let version = canonical.version { parameters.append(("version", version)) }
        return try search(parameters)
    }

    private func search(_ parameters: [(String, String)]) throws -> [Element] {
        guard let client else { return [] }
        var found: [Element] = []
        try client.search("Questionnaire", parameters) { bundle in
            for entry in bundle.children(named: "entry") {
                guard let resource = entry.child(named: "resource"), resource.resourceType == "Questionnaire" else { continue }
                found.append(resource)
            }
            return found.count < Self.maximumFound
        }
        return Array(found.prefix(Self.maximumFound))
    }
}
