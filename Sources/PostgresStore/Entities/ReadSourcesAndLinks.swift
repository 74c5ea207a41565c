import CareModel
import Foundation
import PostgresNIO
import Store

// Resource-to-entity links and the kept contents of FHIR resources (SQLiteStore+Staging.swift's reads).
// Texts are ordered byte by byte (`COLLATE "C"`), as SQLite's BINARY collation orders its keys.
extension PostgreSQLStore {
    /// The entities made from FHIR resource `resourceType/resourceID` (from any source system), in the
    /// order of the link key: source system, entity kind, entity id.
    public func links(resourceType: String, resourceID: String) throws -> [ResourceLink] {
        try links(ofResources: [(resourceType, resourceID)])
    }

    /// The entities made from each of `resources`, in the order asked (a resource asked twice, twice),
    /// each resource's in key order.
    public func links(ofResources resources: [(type: String, id: String)]) throws -> [ResourceLink] {
        guard !resources.isEmpty else { return [] }
        let types = resources.map(\.type), ids = resources.map(\.id)
        return try readStatement { connection in
            let rows = try await connection.query("""
                SELECT l.resource_type, l.resource_id, l.source_system, l.entity_kind, l.entity_id
                FROM unnest(\(types)::text[], \(ids)::text[]) WITH ORDINALITY AS asked(resource_type, resource_id, position)
                JOIN resource_link l ON l.resource_type = asked.resource_type AND l.resource_id = asked.resource_id
                ORDER BY asked.position, l.source_system COLLATE "C", l.entity_kind COLLATE "C", l.entity_id COLLATE "C"
                """, logger: Self.logger)
            var links: [ResourceLink] = []
            for try await (type, id, system, kind, entityID) in rows.decode((String, String, String, String, String).self) {
                guard let kind = EntityKind(rawValue: kind) else { continue }
                links.append(ResourceLink(sourceSystem: system, resourceType: type, resourceID: id, entityKind: kind, entityID: entityID))
            }
            return links
        }
    }

    /// Every kept content of FHIR resource `resourceType/resourceID` (from any source system), oldest first.
    public func sourceResources(resourceType: String, resourceID: String) throws -> [SourceResource] {
        try readStatement { connection in
            let rows = try await connection.query("""
                SELECT source_system, resource_type, resource_id, version_id, last_updated, content_hash, format, body, received_date,
                       activities_with_detail
                FROM source_resource WHERE resource_type = \(resourceType) AND resource_id = \(resourceID) ORDER BY row_id
                """, logger: Self.logger)
            var kept: [SourceResource] = []
            for try await row in rows {
                let (system, type, id, version, lastUpdated, hash, format, body, received, activities) = try row.decode(
                    (String, String, String, String?, String?, String, String, ByteBuffer, Double, String?).self)
                kept.append(SourceResource(
                    sourceSystem: system, resourceType: type, resourceID: id, versionID: version, lastUpdated: lastUpdated, contentHash: hash,
                    format: format, body: Data(body.readableBytesView), receivedDate: Date(timeIntervalSince1970: received),
                    activitiesWithDetail: activities.map(Self.activityPaths)))
            }
            return kept
        }
    }

    /// The paths of the activities with a `detail` recorded with the last kept content of FHIR resource
    /// `resourceType/resourceID`, without reading its body; nil when none is kept or it was kept without them.
    public func activitiesWithDetail(resourceType: String, resourceID: String) throws -> [String]? {
        try readStatement { connection in
            let rows = try await connection.query("""
                SELECT activities_with_detail FROM source_resource WHERE resource_type = \(resourceType) AND resource_id = \(resourceID)
                ORDER BY row_id DESC LIMIT 1
                """, logger: Self.logger)
            var found: String?
            for try await activities in rows.decode(String?.self) { found = activities }
            return found.map(Self.activityPaths)
        }
    }

    /// Activity paths as `activities_with_detail` keeps them: one per line; an empty text is none.
    private static func activityPaths(_ stored: String) -> [String] {
        stored.isEmpty ? [] : stored.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }
}
