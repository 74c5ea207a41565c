import CareModel
import FHIR
import FHIRValidation
import Foundation
import Mapping
import Surveys

/// The export of a survey task's outcome (issue 44, item 4): a QuestionnaireResponse built by the
/// Surveys module from the Questionnaire version the task asks, with the Observations its
/// `observationExtract` items give, in place of the Observation other outcomes become. The exporter
/// sends it as it sends Observations: the same identity rules (the response's id is the one the
/// Observation would have had, its `identifier` the outcome id under the export mapping's system), the
/// same Provenance, validated first, once per outcome version (`PUT QuestionnaireResponse/<id>` or a
/// conditional write on the identifier).
///
/// - status `completed`, `amended` for a later version the provider has or may have, `entered-in-error`
///   for a deletion (which carries no answers and extracts nothing);
/// - extracted Observations: `<response id>-o<n>` (n their position in Questionnaire order), each with
///   the identifier `<outcome id>/o<n>`, `derivedFrom` the response; those an earlier version at the
///   provider extracted beyond this version's (fewer answers extracted, or a deletion) go again as
///   `entered-in-error`, in the same Bundle, so that none stays standing on the server;
/// - the response is validated against its Questionnaire (the Surveys module's validator) and, by the
///   exporter, structurally, with its Provenance and Observations; an error refuses the outcome;
/// - a Questionnaire the store does not keep yet: the outcome waits in the outbox (``Waiting``), retried
///   every ``retrySeconds``, never a dead letter.
struct SurveyExport: Sendable {
    let questionnaires: SurveyQuestionnaireCache
    let exporter: OutcomeExporter
    /// How long an outcome whose Questionnaire has not arrived waits before it is tried again.
    static let retrySeconds: TimeInterval = 3600

    /// The outcome waits for its Questionnaire.
    struct Waiting: Error, CustomStringConvertible {
        let canonical: String
        var description: String { "waiting for the Questionnaire \(canonical), which the store does not keep yet" }
    }

    /// The response (as ``ExportedObservation/observation``), its Provenance and extracted Observations
    /// (``ExportedObservation/companions``); nil when the outcome's task is no survey.
    func export(_ input: OutcomeExportInput) throws -> ExportedObservation? {
        let questionnaire: Questionnaire
        switch try questionnaires.lookup(input.task) {
        case .notSurvey: return nil
        case .missing(let canonical): throw Waiting(canonical: canonical)
        case .found(let found, _): questionnaire = found
        }
        let outcome = input.outcome
        guard let patient = Self.reference(of: input.patient?.metadata.provenance, types: ["Patient"]) else {
            throw ExportRefusal(outcomeID: outcome.id, reason: "its patient was not made from a FHIR Patient, so it has no subject in the provider's record")
        }
        let id = OutcomeExporter.observationID(of: outcome.id)
        let reference = "QuestionnaireResponse/\(id)"
        let basedOn = Self.reference(of: input.task.metadata.provenance, types: ["CarePlan", "ServiceRequest"]).map { [$0] } ?? []
        let context = SurveyResponseContext(
            patient: patient, basedOn: basedOn, authored: outcome.metadata.createdDate ?? outcome.metadata.effectiveDate,
            timeZone: outcome.metadata.timezone, isAmendment: input.earlierVersionMayBeAtProvider, id: id, responseReference: reference)
        let builder = SurveyResponseBuilder(questionnaire)
        let isDeletion = outcome.metadata.deletedDate != nil
        var built: SurveyResponse
        if isDeletion {
            built = builder.build(SurveyAnswers(), context: context)
            built.response.children = built.response.children.filter { $0.name != "item" }.map {
                $0.name == "status" ? Element(name: "status", value: "entered-in-error") : $0
            }
            built.observations = []
        } else {
            do {
                built = try builder.build(checking: SurveyAnswerChecker(questionnaire).check(outcome.values), context: context)
            } catch {
                throw ExportRefusal(outcomeID: outcome.id, reason: "\(error)")
            }
        }
        // Validated against its Questionnaire before it goes (the structure is validated by the exporter).
        if !isDeletion {
            let issues = QuestionnaireResponseValidator(catalog: QuestionnaireCatalog([questionnaire])).validate(built.response, against: questionnaire)
            if let first = issues.first(where: \.severity.isError) {
                throw ExportRefusal(outcomeID: outcome.id, reason: "the QuestionnaireResponse does not fit its Questionnaire: \(first.description)")
            }
        }
        let identifierSystem = exporter.mapping.identifierSystem
        func identifier(_ value: String) -> Element {
            Element(name: "identifier", children: [Element(name: "system", value: identifierSystem), Element(name: "value", value: value)])
        }
        // `identifier` follows `id` (and `meta`, which the builder does not write) in R4's element order.
        var response = built.response
        let afterID = (response.children.firstIndex { $0.name == "id" }).map { $0 + 1 } ?? 0
        response.children.insert(identifier(outcome.id), at: afterID)
        func companion(_ position: Int, _ observation: Element) -> ExportedCompanion {
            ExportedCompanion(
                resourceType: "Observation", id: "\(id)-o\(position)", identifierValue: "\(outcome.id)/o\(position)",
                resource: Element.resource("Observation", children: [Element(name: "id", value: "\(id)-o\(position)"), identifier("\(outcome.id)/o\(position)")]
                    + observation.children.filter { $0.name != "id" && $0.name != "identifier" }))
        }
        var observations = built.observations.enumerated().map(companion)
        // What earlier versions at the provider extracted beyond this one's: withdrawn, not left standing.
        let withdrawn = Self.earlierExtractions(of: input, questionnaire: questionnaire, context: context).dropFirst(observations.count)
        for (position, observation) in zip(observations.count..., withdrawn) {
            observations.append(companion(position, Self.enteredInError(observation)))
        }
        return ExportedObservation(
            id: id, observation: response, provenance: exporter.provenance(target: reference, of: input, patient: patient),
            isFirstVersion: !isDeletion && outcome.metadata.previousVersionUUIDs.isEmpty, companions: observations)
    }

    /// The Observations the earlier versions of the outcome at the provider extracted, by position (the
    /// latest version giving a position wins): built again from those versions, as they were sent. A
    /// version that does not build was refused, so it sent nothing.
    private static func earlierExtractions(of input: OutcomeExportInput, questionnaire: Questionnaire, context: SurveyResponseContext) -> [Element] {
        var extracted: [Element] = []
        let builder = SurveyResponseBuilder(questionnaire)
        for earlier in input.earlierVersionsAtProvider where earlier.metadata.deletedDate == nil {
            guard let built = try? builder.build(checking: SurveyAnswerChecker(questionnaire).check(earlier.values), context: context) else { continue }
            for (position, observation) in built.observations.enumerated() {
                if position < extracted.count { extracted[position] = observation } else { extracted.append(observation) }
            }
        }
        return extracted
    }

    /// `observation` withdrawn: status `entered-in-error` (FHIR's status for a resource that should not
    /// have existed), its code, subject and value kept, so that the server's copy is found and marked.
    static func enteredInError(_ observation: Element) -> Element {
        var withdrawn = observation
        withdrawn.children = observation.children.map { $0.name == "status" ? Element(name: "status", value: "entered-in-error") : $0 }
        return withdrawn
    }

    /// `Type/id` of the FHIR resource an entity was made from, when it is of one of `types`.
    private static func reference(of provenance: Provenance?, types: Set<String>) -> String? {
        guard let provenance, types.contains(provenance.fhirType), !provenance.fhirID.isEmpty else { return nil }
        return "\(provenance.fhirType)/\(provenance.fhirID)"
    }
}
