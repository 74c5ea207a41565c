import CareModel
import FHIR
import Foundation
import Mapping
import Store

/// How a Questionnaire is known in the store: by canonical `url` and `version`, with stand-ins for the
/// Questionnaires that lack them (stated in Docs/surveys-sources.md).
///
/// - No `url`: its source system and `Questionnaire/<id>` (the id its entities would take,
///   `MappingOptions/entityID(_:)`: `Questionnaire/q1` from the default system, `ehr-b:Questionnaire/q1`
///   from another).
/// - No `version`: its `meta.versionId`, else `sha256:` and the first 16 hex digits of the SHA-256 of
///   its JSON (so that a changed Questionnaire without a version is a new version, never the same one).
public enum QuestionnaireIdentity {
    /// The canonical of a survey task, split: `url|version` or `url` alone.
    public struct Canonical: Equatable, Sendable, CustomStringConvertible {
        public var url: String
        public var version: String?

        /// `text` as FHIR writes a canonical (`url` or `url|version`); nil when empty.
        public init?(_ text: String) {
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty else { return nil }
            if let bar = trimmed.lastIndex(of: "|") {
                url = String(trimmed[..<bar])
                let after = String(trimmed[trimmed.index(after: bar)...])
                version = after.isEmpty ? nil : after
            } else {
                url = trimmed
                version = nil
            }
            guard !url.isEmpty else { return nil }
        }

        public init(url: String, version: String?) {
            self.url = url
            self.version = version
        }

        public var description: String { version.map { "\(url)|\($0)" } ?? url }

        /// The FHIR id a relative `Questionnaire/<id>` reference (the R4 core extension's) names, if it is one.
        public var referencedID: String? {
            guard version == nil, url.hasPrefix("Questionnaire/") else { return nil }
            let id = String(url.dropFirst("Questionnaire/".count))
            return id.isEmpty || id.contains("/") ? nil : id
        }
    }

    /// The stored form of Questionnaire `resource`, read from `sourceSystem`; nil when it is no
    /// Questionnaire or has neither url nor id.
    public static func stored(_ resource: Element, sourceSystem: String, keptDate: Date = Date()) -> StoredQuestionnaire? {
        guard resource.resourceType == "Questionnaire" else { return nil }
        let json = FHIRJSON.write(resource)
        let hash = ContentHash.of(json)
        let id = resource.childValue("id").flatMap { $0.isEmpty ? nil : $0 }
        let url: String
        if let written = resource.childValue("url"), !written.isEmpty {
            url = written
        } else if let id {
            url = MappingOptions(sourceSystem: sourceSystem).entityID(ResourceKey(type: "Questionnaire", id: id))
        } else {
            return nil
        }
        let version = nonEmpty(resource.childValue("version"))
            ?? nonEmpty(resource.child(named: "meta")?.childValue("versionId"))
            ?? "sha256:" + hash.prefix(16)
        return StoredQuestionnaire(url: url, version: version, sourceSystem: sourceSystem, resourceID: id, contentHash: hash, json: json, keptDate: keptDate)
    }

    private static func nonEmpty(_ text: String?) -> String? {
        guard let text, !text.isEmpty else { return nil }
        return text
    }
}
