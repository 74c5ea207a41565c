import Foundation

/// How a contact relates to the patient (CareKit `OCKContactCategory`).
public enum ContactCategory: String, Sendable, Hashable, Codable, CaseIterable {
    case careTeam
    case friend
    case family
}
