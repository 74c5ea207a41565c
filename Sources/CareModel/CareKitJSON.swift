import Foundation

/// The JSON coders that read and write entities the way CareKit apps do.
///
/// CareKitStore's types are plain `Codable`; apps and sync layers (ParseCareKit, for one) move them with
/// `JSONEncoder()` / `JSONDecoder()` on default settings: dates as seconds since 2001-01-01 (a JSON number),
/// data as base64, UUIDs as upper-case strings. These coders keep those defaults and only sort keys, so the
/// output is stable from run to run.
///
/// Two shapes are written:
/// - the **wire** shape, ``encodeWire(_:)``: exactly what CareKit 4.0's Codable types encode and require
///   (``CareKitWireObject``). It is what apps are given: `store dump --format carekit-json`,
///   `convert --to carekit` and the app API; revision records carry it (``CareKitRevisionRecord``);
/// - the **stored** shape, ``encode(_:)-(CareEntity)``: each entity's own `Codable` encoding, which the
///   store keeps as payloads and content hashes are computed from (``ContentJSON``). It stays as it was
///   when stores were written, so that an unchanged import changes nothing; it is not served to apps.
///
/// Decoding (``makeDecoder()`` with the entities' own decoders) accepts both, and CareKit 4.0's, 3's and
/// 2.1's JSON.
public enum CareKitJSON {
    /// An encoder producing CareKit-decodable JSON.
    public static func makeEncoder(prettyPrinted: Bool = false) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = prettyPrinted ? [.sortedKeys, .prettyPrinted] : [.sortedKeys]
        return encoder
    }

    /// The compact JSON of `value`, exactly as ``makeEncoder(prettyPrinted:)`` writes it, written by
    /// `SortedKeysJSONWriter` (`JSONEncoder` only for what that writer does not cover): entities are
    /// encoded twice on every import, for their content hash and their stored payload.
    public static func encode<Value: Encodable>(_ value: Value) throws -> Data {
        if let bytes = try SortedKeysJSONWriter.encode(value) { return Data(bytes) }
        return try makeEncoder().encode(value)
    }

    /// The compact CareKit JSON of the entity `entity` holds: the bytes ``makeEncoder(prettyPrinted:)`` writes.
    public static func encode(_ entity: CareEntity) throws -> Data {
        switch entity {
        case .patient(let value): return try encode(value)
        case .carePlan(let value): return try encode(value)
        case .contact(let value): return try encode(value)
        case .task(let value): return try encode(value)
        case .outcome(let value): return try encode(value)
        }
    }

    /// The CareKit 4.0 JSON of `entity` (compact, sorted keys), as ``CareKitWireObject`` writes it: links
    /// as the entity has them (set them with ``CareKitLinks`` first).
    public static func encodeWire(_ entity: CareEntity) throws -> Data {
        try encode(CareKitWireObject(entity))
    }

    /// A decoder for JSON written by CareKit (or by ``makeEncoder(prettyPrinted:)``).
    public static func makeDecoder() -> JSONDecoder {
        JSONDecoder()
    }
}
