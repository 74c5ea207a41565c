import Foundation
import Hummingbird
import NIOCore
import Store

/// `GET /carekit/v1/questionnaires?url=URL[&version=VERSION]`: the Questionnaire a survey task of the
/// token's patient asks, as FHIR JSON (`application/fhir+json`), so that an app renders it with
/// ResearchKitOnFHIR or its own UI.
///
/// Only a Questionnaire that one of the patient's tasks (any version of it: an outcome recorded against
/// an earlier one still needs its form) names under `userInfo` `questionnaire` is served; any other
/// request is the same 404 whether the Questionnaire exists or not, so that nothing of what other
/// patients are asked is revealed. Without `version`, the version the patient's task names is served
/// (the newest kept, when a task names the url alone).
struct QuestionnaireRoutes {
    let store: any AsyncAppStore
    /// The longest `url` or `version` taken (a canonical is a URL; longer text is no request of ours).
    static let maximumParameterLength = 2048

    func register(on group: RouterGroup<AppRequestContext>) {
        group.get("questionnaires") { request, context in
            let patientID = try context.patientID()
            let parameters = request.uri.queryParameters
            let (url, version) = (parameters.get("url"), parameters.get("version"))
            let found = try await store.read { try Self.questionnaire(url: url, version: version, patientID: patientID, in: $0) }
            context.auditNote.set("questionnaire")
            return Response(
                status: .ok, headers: [.contentType: "application/fhir+json", .cacheControl: "no-store"],
                body: .init(byteBuffer: ByteBuffer(bytes: found.json)))
        }
    }

    /// The Questionnaire of canonical `url` (at `version`, else the newest a task asks) that the patient's
    /// survey tasks ask, read from `store`; 400 or 404 as the route answers.
    private static func questionnaire(url: String?, version: String?, patientID: String, in store: any AppSyncStore) throws -> StoredQuestionnaire {
        guard let url, !url.isEmpty else { throw APIError.badRequest("url= (the Questionnaire's canonical url) is required") }
        guard url.count <= Self.maximumParameterLength, (version?.count ?? 0) <= Self.maximumParameterLength else {
            throw APIError.badRequest("url and version are at most \(Self.maximumParameterLength) characters")
        }
        guard let questionnaires = store.questionnaires else { throw APIError.notFound }
        // The versions of `url` the patient's tasks ask (nil: a task names the url alone).
        let asked = try askedVersions(of: url, patientID: patientID, in: store)
        let found: StoredQuestionnaire?
        if let version, !version.isEmpty {
            guard asked.contains(version) || asked.contains(nil) else { throw APIError.notFound }
            found = try questionnaires.questionnaire(url: url, version: version)
        } else if asked.isEmpty {
            throw APIError.notFound
        } else {
            // The newest of the versions asked that the store keeps.
            let kept = try asked.compactMap { $0 }.compactMap { try questionnaires.questionnaire(url: url, version: $0) }
            found = asked.contains(nil) ? try questionnaires.latestQuestionnaire(url: url) : kept.max { $0.keptDate < $1.keptDate }
        }
        guard let found else { throw APIError.notFound }
        return found
    }

    /// The versions of `url` named by any version of the patient's survey tasks.
    private static func askedVersions(of url: String, patientID: String, in store: any AppSyncStore) throws -> Set<String?> {
        let tasks = try PatientData(store: store, patientID: patientID).tasks()
        var asked: Set<String?> = []
        for entity in try store.histories(.task, ids: tasks.map(\.id)) {
            guard case .task(let task) = entity, task.metadata.tags?.contains("survey") ?? false,
                  let canonical = task.metadata.userInfo?["questionnaire"]
            else { continue }
            if canonical == url {
                asked.insert(nil)
            } else if canonical.hasPrefix(url + "|") {
                asked.insert(String(canonical.dropFirst(url.count + 1)))
            }
        }
        return asked
    }
}
