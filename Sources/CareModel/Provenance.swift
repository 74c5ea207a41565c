import Foundation

/// Where a care entity came from: the FHIR resource (and its version) it was made from, and a hash of
/// the content, so that an import of unchanged content can be recognised and make no new version.
public struct Provenance: Sendable, Hashable, Codable {
    /// The source system, e.g. the FHIR server's base URL.
    public var sourceSystem: String
    /// The FHIR resource type, e.g. `CarePlan`.
    public var fhirType: String
    /// The FHIR resource id (`Resource.id`).
    public var fhirID: String
    /// `Resource.meta.versionId`, when the server gave one.
    public var versionID: String?
    /// `Resource.meta.lastUpdated`, when the server gave one.
    public var lastUpdated: Date?
    /// A hash of the entity's content (computed by whoever imports it), for change detection.
    public var contentHash: String?

    public init(
        sourceSystem: String,
        fhirType: String,
        fhirID: String,
        versionID: String? = nil,
        lastUpdated: Date? = nil,
        contentHash: String? = nil
    ) {
        self.sourceSystem = sourceSystem
        self.fhirType = fhirType
        self.fhirID = fhirID
        self.versionID = versionID
        self.lastUpdated = lastUpdated
        self.contentHash = contentHash
    }
}
