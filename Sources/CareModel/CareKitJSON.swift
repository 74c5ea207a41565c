import Foundation

/// The JSON coders that read and write entities the way CareKit apps do.
///
/// CareKitStore's types are plain `Codable`; apps and sync layers (ParseCareKit, for one) move them with
/// `JSONEncoder()` / `JSONDecoder()` on default settings: dates as seconds since 2001-01-01 (a JSON number),
/// data as base64, UUIDs as upper-case strings. These coders keep those defaults and only sort keys, so the
/// output is stable from run to run.
public enum CareKitJSON {
    /// An encoder producing CareKit-decodable JSON.
    public static func makeEncoder(prettyPrinted: Bool = false) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = prettyPrinted ? [.sortedKeys, .prettyPrinted] : [.sortedKeys]
        return encoder
    }

    /// A decoder for JSON written by CareKit (or by ``makeEncoder(prettyPrinted:)``).
    public static func makeDecoder() -> JSONDecoder {
        JSONDecoder()
    }
}
