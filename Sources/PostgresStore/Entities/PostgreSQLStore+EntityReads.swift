import CareModel
import Foundation
import Store

// OWNER: helper h-pgreads. Stubs until the entity reads land.
extension PostgreSQLStore {
    public func patients(_ query: EntityQuery) throws -> [Patient] { throw PostgresStoreError.unavailable(feature: "reading patients") }
    public func carePlans(_ query: EntityQuery) throws -> [CarePlan] { throw PostgresStoreError.unavailable(feature: "reading care plans") }
    public func contacts(_ query: EntityQuery) throws -> [Contact] { throw PostgresStoreError.unavailable(feature: "reading contacts") }
    public func tasks(_ query: EntityQuery) throws -> [CareTask] { throw PostgresStoreError.unavailable(feature: "reading tasks") }
    public func outcomes(_ query: EntityQuery) throws -> [Outcome] { throw PostgresStoreError.unavailable(feature: "reading outcomes") }
    public func tasks(carePlanID: String, _ query: EntityQuery) throws -> [CareTask] { throw PostgresStoreError.unavailable(feature: "reading tasks") }
    public func events(patientID: String, in interval: DateInterval) throws -> [Event] { throw PostgresStoreError.unavailable(feature: "reading events") }
    public func lastOutcomeEventStarts(taskUUIDs: [UUID]) throws -> [UUID: Date] { throw PostgresStoreError.unavailable(feature: "reading outcomes") }
    public func links(resourceType: String, resourceID: String) throws -> [ResourceLink] { throw PostgresStoreError.unavailable(feature: "reading links") }
    public func links(ofResources resources: [(type: String, id: String)]) throws -> [ResourceLink] { throw PostgresStoreError.unavailable(feature: "reading links") }
    public func sourceResources(resourceType: String, resourceID: String) throws -> [SourceResource] { throw PostgresStoreError.unavailable(feature: "reading source resources") }
    public func activitiesWithDetail(resourceType: String, resourceID: String) throws -> [String]? { throw PostgresStoreError.unavailable(feature: "reading source resources") }
    public func statistics() throws -> StoreStatistics { throw PostgresStoreError.unavailable(feature: "statistics") }
    public func forEachEntity(_ kind: EntityKind, _ query: EntityQuery, _ body: (CareEntity) throws -> Void) throws { throw PostgresStoreError.unavailable(feature: "reading entities") }
    public func integrityCheck() throws -> [String] { throw PostgresStoreError.unavailable(feature: "the integrity check") }
}
