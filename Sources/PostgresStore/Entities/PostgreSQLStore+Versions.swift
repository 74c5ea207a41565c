import CareModel
import Foundation
import Store

// OWNER: helper h-pgwrites. Stubs until the write side lands: every version of an entity, what the
// writer's tests read back.
extension PostgreSQLStore {
    public func history(_ kind: EntityKind, id: String) throws -> [CareEntity] { throw PostgresStoreError.unavailable(feature: "reading histories") }
    public func histories(_ kind: EntityKind, ids: [String]) throws -> [CareEntity] { throw PostgresStoreError.unavailable(feature: "reading histories") }
    public func forEachVersion(_ kind: EntityKind, _ body: (CareEntity) throws -> Void) throws { throw PostgresStoreError.unavailable(feature: "reading versions") }
}
