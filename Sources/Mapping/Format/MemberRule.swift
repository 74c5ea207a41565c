import Foundation

/// One place a resource records who is on a patient's care team: a rule of an entity's `members:`.
///
/// An entity with `members:` (a contact entity of the Patient mapping) makes one entity per person its
/// rules name, however many rules and resources name them: the practitioner a Reference names (through
/// a PractitionerRole to its practitioner), each with the reasons (`reason`) of every rule that named
/// them and, for rules with `seen`, when they last saw the patient.
///
/// ```yaml
/// members:
///   - reason: general practitioner
///     from: generalPractitioner             # on the Patient: References
///   - reason: encounter
///     reverse: Encounter                    # the input's Encounters whose `on` names the Patient
///     on: subject
///     when: status != 'entered-in-error' and status != 'cancelled'
///     from: participant.individual          # on each Encounter: References
///     seen: period.end | period.start       # when they saw the patient
///     window: 2 years                       # only those seen in the 2 years before `window-end`
///     window-end: latest                    # the patient's latest `seen` of this rule (or `run`: the run's date)
/// ```
public struct MemberRule: Sendable {
    /// Why a person this rule names is on the team: kept in the contact.
    public let reason: String
    /// When set, the rule reads the resources of this type whose `on` references name the mapped resource.
    public let reverseType: String?
    public let on: MappingExpression?
    /// Only referring resources (or, without `reverse`, the resource) for which this is true count.
    public let filter: MappingExpression?
    /// The References (to Practitioner or PractitionerRole) naming the members.
    public let from: MappingExpression
    /// When the referring resource saw the patient (a date or dateTime).
    public let seen: MappingExpression?
    /// Members whose `seen` is older than this before the window's end are left out (and so leave the team).
    public let window: MemberWindow?
    public let location: MappingLocation
}

/// How far back a member rule's `seen` reaches.
public struct MemberWindow: Sendable, Equatable {
    /// What the window counts back from.
    public enum End: String, Sendable, CaseIterable {
        /// The run's date (``MappingOptions/runDate``): a practitioner leaves the team as time passes.
        case run
        /// The latest `seen` of the rule for the patient: the last stretch of the patient's own record
        /// (records exported late, or sample data years old, keep their recent practitioners).
        case latest
    }

    public let amount: Int
    public let unit: Calendar.Component
    public let end: End

    /// Parses `2 years`, `18 months`, `6 weeks`, `90 days` (1 to 100,000 of the unit); nil otherwise.
    public init?(_ text: String, end: End) {
        let parts = text.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 2, let amount = Int(parts[0]), (1...100_000).contains(amount) else { return nil }
        switch parts[1].lowercased() {
        case "day", "days": unit = .day
        case "week", "weeks": unit = .weekOfYear
        case "month", "months": unit = .month
        case "year", "years": unit = .year
        default: return nil
        }
        self.amount = amount
        self.end = end
    }

    /// The earliest time inside a window ending at `end`.
    public func start(endingAt end: Date, calendar: Calendar) -> Date {
        calendar.date(byAdding: unit, value: -amount, to: end) ?? .distantPast
    }
}
