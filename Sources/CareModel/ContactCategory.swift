import Foundation

/// How a contact relates to the patient, with CareKit's cases and raw values (`OCKContactCategory`:
/// `careProvider`, `friendsAndFamily`), so that CareKit decodes them.
public enum ContactCategory: String, Sendable, Hashable, Codable, CaseIterable {
    /// A member of the care team (a FHIR Practitioner or PractitionerRole).
    case careProvider
    /// A friend or relative (a FHIR RelatedPerson).
    case friendsAndFamily
}
