import CareModel
import Foundation

/// A FHIR resource exactly as it was received from a source system, kept for audit and re-mapping.
///
/// The store keeps each distinct content once: receiving the same bytes again (same content hash) for
/// the same resource is a no-op, so an import can be re-run safely.
public struct SourceResource: Equatable, Sendable {
    /// The system it came from (a server base URL or a file name).
    public var sourceSystem: String
    /// The FHIR resource type, such as `CarePlan`.
    public var resourceType: String
    /// The resource's logical id on the source system.
    public var resourceID: String
    /// `meta.versionId`, when the source gave one.
    public var versionID: String?
    /// `meta.lastUpdated` as written by the source, when given.
    public var lastUpdated: String?
    /// A hash of `body`, which identifies this content.
    public var contentHash: String
    /// The serialization of `body`: `json` or `xml`.
    public var format: String
    /// The bytes as received.
    public var body: Data
    /// When CareGate received it.
    public var receivedDate: Date
    /// For a CarePlan, the paths of its activities that have a `detail` (`CarePlan.activity[2]`), noted
    /// by the import from the resource it parsed, so that an export deciding on a `detail.status` patch
    /// reads the answer rather than parsing `body` again; nil for other resources, and for a CarePlan
    /// kept before stores recorded it.
    public var activitiesWithDetail: [String]?

    public init(
        sourceSystem: String, resourceType: String, resourceID: String, versionID: String? = nil,
        lastUpdated: String? = nil, contentHash: String? = nil, format: String = "json", body: Data,
        receivedDate: Date = Date(), activitiesWithDetail: [String]? = nil
    ) {
        self.sourceSystem = sourceSystem
        self.resourceType = resourceType
        self.resourceID = resourceID
        self.versionID = versionID
        self.lastUpdated = lastUpdated
        self.contentHash = contentHash ?? ContentHash.of(body)
        self.format = format
        self.body = body
        self.receivedDate = receivedDate
        self.activitiesWithDetail = activitiesWithDetail
    }
}
