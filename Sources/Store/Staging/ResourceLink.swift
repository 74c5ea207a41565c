import CareModel
/// The link between one FHIR resource and one care entity made from it.
///
/// One resource can make several entities (a CarePlan makes a care plan and its tasks) and one entity
/// can draw on several resources. Links name the entity by its stable id, so they hold across versions.
/// The store writes them itself for every entity whose provenance names a resource.
public struct ResourceLink: Hashable, Sendable {
    public var sourceSystem: String
    public var resourceType: String
    public var resourceID: String
    public var entityKind: EntityKind
    public var entityID: String

    /// The resource of the link.
    public var resource: ResourceKey { ResourceKey(type: resourceType, id: resourceID) }

    public init(sourceSystem: String, resourceType: String, resourceID: String, entityKind: EntityKind, entityID: String) {
        self.sourceSystem = sourceSystem
        self.resourceType = resourceType
        self.resourceID = resourceID
        self.entityKind = entityKind
        self.entityID = entityID
    }
}
