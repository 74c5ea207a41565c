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
    let store: any AppSyncStore
    /// The longest `url` or `version` taken (a canonical is a URL; longer text is no request of ours).
    static let maximumParameterLength = 2048

    func register(on group: RouterGroup<AppRequestContext>) {
        group.get("questionnaires") { request, context in try StoreWork.read { try questionnaire(request, context) } }
    }

    private func questionnaire(_ request: Request, _ context: AppRequestContext) throws -> Response {
        let patientID = try context.patientID()
        let parameters = request.uri.queryParameters
        guard let url = parameters.get("url"), !url.isEmpty else { throw APIError.badRequest("url= (the Questionnaire's canonical url) is required") }
        let version = parameters.get("version")
        guard url.count <= Self.maximumParameterLength, (version?.count ?? 0) <= Self.maximumParameterLength else {
            throw APIError.badRequest("url and version are at most \(Self.maximumParameterLength) characters")
        }
        guard let questionnaires = store.questionnaires else { throw APIError.notFound }
        // The versions of `url` the patient's tasks ask (nil: a task names the url alone).
        let asked = try askedVersions(of: url, patientID: patientID)
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
        context.auditNote.set("questionnaire")
        return Response(
            status: .ok, headers: [.contentType: "application/fhir+json", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: found.json)))
    }

    /// The versions of `url` named by any version of the patient's survey tasks.
    private func askedVersions(of url: String, patientID: String) throws -> Set<String?> {
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
