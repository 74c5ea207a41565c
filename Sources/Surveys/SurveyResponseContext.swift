import FHIRCore
import Foundation

/// What a QuestionnaireResponse says besides the answers: whose it is, what it answers, when, and
/// which version of an outcome it is.
public struct SurveyResponseContext: Sendable {
    /// The patient: `subject`, `author` and `source` (`Patient/123`, or a `urn:uuid:`).
    public var patient: String
    /// `basedOn`: the CarePlan or ServiceRequest the survey task came from.
    public var basedOn: [String]
    /// `partOf` (Observation or Procedure), copied to extracted Observations.
    public var partOf: [String]
    /// `authored`: when the outcome was created.
    public var authored: Date
    /// The time zone `authored` is written in.
    public var timeZone: TimeZone
    /// True for a later version of the same outcome: the response is `amended`, not `completed`.
    public var isAmendment: Bool
    /// The response's `id`, when the caller assigns one.
    public var id: String?
    /// How extracted Observations name the response in `derivedFrom` (`QuestionnaireResponse/<id>`,
    /// or the `urn:uuid:` of its Bundle entry); none when nil.
    public var responseReference: String?

    public init(patient: String, basedOn: [String] = [], partOf: [String] = [], authored: Date, timeZone: TimeZone = .gmt,
                isAmendment: Bool = false, id: String? = nil, responseReference: String? = nil) {
        self.patient = patient
        self.basedOn = basedOn
        self.partOf = partOf
        self.authored = authored
        self.timeZone = timeZone
        self.isAmendment = isAmendment
        self.id = id
        self.responseReference = responseReference
    }

    /// `authored` as FHIR dateTime text.
    var authoredText: String { FHIRTemporal(authored, in: timeZone).text }
}

/// A built QuestionnaireResponse, the Observations extracted from it, and the scores CareGate computed.
public struct SurveyResponse: Sendable {
    /// The QuestionnaireResponse resource.
    public var response: Element
    /// Observations of the items marked `observationExtract`, in Questionnaire order.
    public var observations: [Element]
    /// The answers CareGate computed (calculatedExpression, total scores), by linkId.
    public var calculated: [String: AnswerValue]
    /// What was left out or could not be done, in words (no answer text).
    public var notes: [String]
}

/// Why a response could not be built.
public enum SurveyBuildError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The answers were not checked or did not pass: build only what the checker accepted.
    case notAccepted([SurveyAnswerProblem])

    public var description: String {
        switch self {
        case .notAccepted(let problems): "the outcome does not fit the Questionnaire: " + problems.map(\.description).joined(separator: "; ")
        }
    }
}
