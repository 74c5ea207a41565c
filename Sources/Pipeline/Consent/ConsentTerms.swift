import Foundation

/// The consent terms an operator publishes (`caregate serve --consent-terms FILE`, `consent-terms:` in
/// the sync configuration): what the app shows the patient, what the patient's agreement permits, and
/// whether data flows without it. Read by ``ConsentTermsFile``; Docs/consent.md documents the file.
public struct ConsentTerms: Sendable, Equatable {
    /// The terms' id (FHIR id characters): a Consent's id is derived from the patient and this.
    public var id: String
    /// Their version: an agreement counts for the version agreed to only.
    public var version: String
    public var title: String
    /// The document's format, `markdown` or `html`, and its text: exactly what the patient agrees to.
    public var format: String
    public var document: String
    /// Consent.scope (a code of http://terminology.hl7.org/CodeSystem/consentscope).
    public var scope: String
    /// Consent.category, each a coding.
    public var categories: [ConsentCoding]
    /// What agreeing permits (``ConsentPermit``), in the file's order.
    public var permits: [ConsentPermit]
    /// Whether a patient without an active agreement is refused data and writes nothing back.
    public var required: Bool
    /// Consent.organization: the custodian of the consent, as a reference and/or a name.
    public var organizationReference: String?
    public var organizationName: String?

    public init(
        id: String, version: String, title: String, format: String = "markdown", document: String, scope: String = "patient-privacy",
        categories: [ConsentCoding] = [ConsentCoding.patientConsent], permits: [ConsentPermit], required: Bool,
        organizationReference: String? = nil, organizationName: String? = nil
    ) {
        self.id = id
        self.version = version
        self.title = title
        self.format = format
        self.document = document
        self.scope = scope
        self.categories = categories
        self.permits = permits
        self.required = required
        self.organizationReference = organizationReference
        self.organizationName = organizationName
    }

    /// The base of ``policyURI``: the terms' id in CareGate's namespace.
    public static let policyPrefix = "urn:caregate:consent-terms:"

    /// Consent.policy.uri: names the terms and their version (`urn:caregate:consent-terms:<id>:<version>`);
    /// a Consent the provider holds counts for these terms when its policy names them so.
    public var policyURI: String { Self.policyPrefix + id + ":" + version }

    /// The terms id and version a policy uri names, when it is one of ``policyURI``'s form.
    public static func termsOf(policyURI uri: String) -> (id: String, version: String)? {
        guard uri.hasPrefix(policyPrefix) else { return nil }
        let rest = uri.dropFirst(policyPrefix.count)
        guard let colon = rest.lastIndex(of: ":") else { return nil }
        let id = String(rest[..<colon]), version = String(rest[rest.index(after: colon)...])
        guard !id.isEmpty, !version.isEmpty else { return nil }
        return (id, version)
    }
}

/// A coding of Consent.category.
public struct ConsentCoding: Sendable, Equatable {
    public var system: String
    public var code: String
    public var display: String

    public init(system: String, code: String, display: String) {
        self.system = system
        self.code = code
        self.display = display
    }

    /// LOINC 59284-0 *Patient Consent*: the default category.
    public static let patientConsent = ConsentCoding(system: "http://loinc.org", code: "59284-0", display: "Patient Consent")
    /// Research information access (consentcategorycodes `research`), for terms that permit research.
    public static let research = ConsentCoding(
        system: "http://terminology.hl7.org/CodeSystem/consentcategorycodes", code: "research", display: "Research Information Access")

    /// The categories a terms file names: `patient-consent` and `research`.
    public static let named: [String: ConsentCoding] = ["patient-consent": patientConsent, "research": research]
}

/// What a patient's agreement permits: each becomes a `permit` provision of the Consent, with the
/// action (http://terminology.hl7.org/CodeSystem/consentaction) and the resource types it covers.
public enum ConsentPermit: String, CaseIterable, Sendable {
    /// The app reads the patient's care plan (CarePlan, tasks, contacts).
    case readCarePlan = "read-care-plan"
    /// What the patient records is written back (Observations, QuestionnaireResponses).
    case writeOutcomes = "write-outcomes"
    /// What the patient shares with their care team is sent to it (Communication).
    case shareWithCareTeam = "share-with-care-team"
    /// The data is used for research.
    case research

    /// The consentaction code.
    public var action: String {
        switch self {
        case .readCarePlan: return "access"
        case .writeOutcomes: return "collect"
        case .shareWithCareTeam: return "disclose"
        case .research: return "use"
        }
    }

    /// The resource types the permit covers (http://hl7.org/fhir/resource-types).
    public var resourceTypes: [String] {
        switch self {
        case .readCarePlan: return ["CarePlan", "Task", "CareTeam"]
        case .writeOutcomes: return ["Observation", "QuestionnaireResponse"]
        case .shareWithCareTeam: return ["Communication"]
        case .research: return []
        }
    }
}
