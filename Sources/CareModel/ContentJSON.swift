import Foundation
import Synchronization

/// An entity's content as JSON: its CareKit JSON without the version header (``CareEntity/content``)
/// and without the content hash itself. Its SHA-256 is the entity's content hash, and the store keeps
/// it as the entity's payload (the version fields and the hash live in columns, which are what a read
/// takes them from).
///
/// Import hashes every entity it maps and the store then writes the changed ones: the bytes made for
/// the hash are remembered by hash, so that the writer takes them rather than encoding the entity a
/// second time (on the thread every write waits for).
public enum ContentJSON {
    /// The content JSON of `entity`.
    public static func encode(_ entity: CareEntity) throws -> Data {
        var content = entity.content
        var metadata = content.metadata
        metadata.provenance?.contentHash = nil
        content.metadata = metadata
        return try CareKitJSON.encode(content)
    }

    /// The content hash of `entity`: the SHA-256 of its content JSON, which is kept for ``payload(of:)``.
    public static func hash(_ entity: CareEntity) throws -> String {
        let data = try encode(entity)
        let hash = ContentHash.of(data)
        made.keep(data, for: hash)
        return hash
    }

    /// The content JSON of `entity` to store: the bytes its hash was made from when ``hash(_:)`` made it,
    /// else encoded now.
    public static func payload(of entity: CareEntity) throws -> Data {
        if let hash = entity.metadata.provenance?.contentHash, let data = made.take(hash) { return data }
        return try encode(entity)
    }

    /// Drops the content JSON kept for `entity`'s hash, unused: for a version that keeps the hash of
    /// content it no longer has (its payload is encoded when written). Encodes nothing.
    public static func forget(_ entity: CareEntity) {
        if let hash = entity.metadata.provenance?.contentHash { _ = made.take(hash) }
    }

    private static let made = MadeContent()
}

/// Content JSON by hash, from hashing to writing; at most `limit` entries (the entities an import maps
/// but finds unchanged are never written, and never taken).
private final class MadeContent: Sendable {
    private let byHash = Mutex<[String: Data]>([:])
    private let limit = 50_000

    func keep(_ data: Data, for hash: String) {
        byHash.withLock { byHash in
            if byHash.count >= limit { byHash.removeAll(keepingCapacity: true) }
            byHash[hash] = data
        }
    }

    func take(_ hash: String) -> Data? {
        byHash.withLock { $0.removeValue(forKey: hash) }
    }
}
