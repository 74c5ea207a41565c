import Foundation

/// The SMART App Launch scopes of an issuer's token (its `scope` claim), and the access they grant to
/// the app API. Only patient-level scopes count (`patient/...`): the API serves one patient's data, the
/// one the token's `patient` claim names; `user/` and `system/` scopes grant nothing here.
///
/// - **Read** (every `GET`: pull, views, insights) needs a read grant on every resource type: a pull
///   carries Patient, CarePlan, MedicationRequest, Practitioner, RelatedPerson and Observation data
///   alike, so one type's scope is not enough. v1 `patient/*.read` or `patient/*.*`; v2 `patient/*.` with
///   `r` among its permissions (`patient/*.rs`, `patient/*.r`, `patient/*.cruds`).
/// - **Write** (the push, which stores outcomes: FHIR Observations) needs a write grant on Observation or
///   on every type: v1 `patient/Observation.write`, `patient/*.write` (or `.*`); v2 with both `c` and `u`
///   (`patient/Observation.cu`, `patient/*.cruds`), since a push creates outcomes and new versions of them.
///
/// A v2 scope narrowed by a query (`patient/Observation.rs?category=...`) grants nothing here: the API
/// cannot honour the narrowing, so it does not widen it.
struct SMARTScopes: Sendable, Equatable {
    struct Scope: Sendable, Equatable {
        var resourceType: String
        var read: Bool
        var create: Bool
        var update: Bool
    }

    /// The patient-level scopes among those given; every other scope is left out.
    let patientScopes: [Scope]

    /// `claim` is the space-separated `scope` claim (RFC 8693 §4.2); at most 1,000 scopes are read.
    init(_ claim: String?) {
        patientScopes = (claim ?? "").split(separator: " ").prefix(1_000).compactMap(Self.parse)
    }

    func grants(_ access: TokenAccess) -> Bool {
        switch access {
        case .read: return patientScopes.contains { $0.resourceType == "*" && $0.read }
        case .write: return patientScopes.contains { ($0.resourceType == "*" || $0.resourceType == "Observation") && $0.create && $0.update }
        }
    }

    /// One `patient/<Type|*>.<permissions>` scope, or nil for any other or a malformed one.
    static func parse(_ text: Substring) -> Scope? {
        guard text.hasPrefix("patient/"), !text.contains("?") else { return nil }
        let rest = text.dropFirst("patient/".count)
        guard let dot = rest.lastIndex(of: ".") else { return nil }
        let type = String(rest[..<dot]), permissions = String(rest[rest.index(after: dot)...])
        guard type == "*" || (!type.isEmpty && type.utf8.count <= 64 && type.allSatisfy { $0.isASCII && $0.isLetter }) else { return nil }
        switch permissions {
        case "read": return Scope(resourceType: type, read: true, create: false, update: false)
        case "write": return Scope(resourceType: type, read: false, create: true, update: true)
        case "*": return Scope(resourceType: type, read: true, create: true, update: true)
        default:
            // SMART v2: a non-empty subsequence of "cruds", in that order, each letter once.
            var remaining = Substring("cruds")
            for letter in permissions {
                guard let found = remaining.firstIndex(of: letter) else { return nil }
                remaining = remaining[remaining.index(after: found)...]
            }
            guard !permissions.isEmpty else { return nil }
            return Scope(resourceType: type, read: permissions.contains("r"), create: permissions.contains("c"), update: permissions.contains("u"))
        }
    }
}
