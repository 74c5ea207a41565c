import FileSafety
import Foundation
import Yams

/// Reads a consent terms file (YAML) and the document beside it into ``ConsentTerms``; every problem is a
/// ``ConsentTermsError`` with its file:line:column, so that a broken file is refused before anything is
/// served.
///
/// ```yaml
/// id: app-sharing                 # FHIR id characters
/// version: "2"
/// title: Sharing your care data with the CareGate app
/// document: consent.md            # Markdown (.md) or HTML (.html), beside this file
/// scope: patient-privacy          # optional: patient-privacy (default), research, treatment, adr
/// category: [patient-consent]     # optional: patient-consent (LOINC 59284-0, default), research
/// permits: [read-care-plan, write-outcomes]
/// required: true
/// organization:                   # optional: the custodian, Consent.organization
///   reference: Organization/clinic-1
///   display: Example Clinic
/// ```
public enum ConsentTermsFile {
    static let keys: Set<String> = ["id", "version", "title", "document", "scope", "category", "permits", "required", "organization"]
    static let organizationKeys: Set<String> = ["reference", "display"]
    static let scopes = ["patient-privacy", "research", "treatment", "adr"]
    /// The largest terms file and document read.
    public static let maximumBytes = 1 << 20

    /// Reads `path` and its document.
    public static func load(path: String) throws -> ConsentTerms {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConsentTermsError(location: path, message: "cannot be read")
        }
        guard data.count <= maximumBytes, let text = String(data: data, encoding: .utf8) else {
            throw ConsentTermsError(location: path, message: "is not UTF-8 text of at most \(maximumBytes) bytes")
        }
        return try parse(text, file: path)
    }

    /// Reads `text`, the contents of `file` (the document is read from `file`'s folder).
    public static func parse(_ text: String, file: String) throws -> ConsentTerms {
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch let error as YamlError {
            throw syntaxProblem(error, file: file)
        } catch {
            throw ConsentTermsError(location: file, message: "not YAML")
        }
        func place(_ node: Node) -> String { node.mark.map { "\(file):\($0.line):\($0.column)" } ?? file }
        guard let root, let mapping = root.mapping else {
            throw ConsentTermsError(location: root.map(place) ?? file, message: "consent terms are a mapping with id, version, title, document, permits and required")
        }
        var settings: [String: Node] = [:]
        for (key, value) in mapping {
            guard let name = key.string, keys.contains(name) else {
                throw ConsentTermsError(location: place(key), message: "unknown setting '\(key.string ?? "")' (known: \(keys.sorted().joined(separator: ", ")))")
            }
            settings[name] = value
        }
        func setting(_ name: String, pattern: String? = nil) throws -> String {
            guard let node = settings[name] else { throw ConsentTermsError(location: place(root), message: "missing `\(name):`") }
            guard let value = node.string, !value.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw ConsentTermsError(location: place(node), message: "`\(name):` is a text")
            }
            if let pattern, value.range(of: pattern, options: .regularExpression) == nil {
                throw ConsentTermsError(location: place(node), message: "`\(name):` '\(value)' may hold letters, digits, '-' and '.' only (at most 64)")
            }
            return value
        }
        let id = try setting("id", pattern: "^[A-Za-z0-9.-]{1,64}$")
        let version = try setting("version", pattern: "^[A-Za-z0-9.-]{1,64}$")
        let title = try setting("title")
        let documentName = try setting("document")
        let (format, document) = try readDocument(documentName, node: settings["document"]!, termsFile: file, place: place)
        var scope = "patient-privacy"
        if let node = settings["scope"] {
            guard let value = node.string, scopes.contains(value) else {
                throw ConsentTermsError(location: place(node), message: "`scope:` is one of \(scopes.joined(separator: ", "))")
            }
            scope = value
        }
        var categories = [ConsentCoding.patientConsent]
        if let node = settings["category"] {
            let items = node.sequence.map(Array.init) ?? [node]
            categories = try items.map { item in
                guard let name = item.string, let coding = ConsentCoding.named[name] else {
                    throw ConsentTermsError(
                        location: place(item), message: "`category:` names \(ConsentCoding.named.keys.sorted().joined(separator: " or "))")
                }
                return coding
            }
            guard !categories.isEmpty else { throw ConsentTermsError(location: place(node), message: "`category:` names one category at least") }
        }
        guard let permitsNode = settings["permits"] else { throw ConsentTermsError(location: place(root), message: "missing `permits:`") }
        guard let permitItems = permitsNode.sequence.map(Array.init), !permitItems.isEmpty else {
            throw ConsentTermsError(location: place(permitsNode), message: "`permits:` is a list of what agreeing permits")
        }
        var permits: [ConsentPermit] = []
        for item in permitItems {
            guard let name = item.string, let permit = ConsentPermit(rawValue: name) else {
                throw ConsentTermsError(
                    location: place(item), message: "unknown permit '\(item.string ?? "")' (known: \(ConsentPermit.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            if !permits.contains(permit) { permits.append(permit) }
        }
        guard let requiredNode = settings["required"] else { throw ConsentTermsError(location: place(root), message: "missing `required:` (true or false)") }
        guard let required = requiredNode.bool else { throw ConsentTermsError(location: place(requiredNode), message: "`required:` is true or false") }
        var terms = ConsentTerms(
            id: id, version: version, title: title, format: format, document: document, scope: scope, categories: categories, permits: permits,
            required: required)
        if let node = settings["organization"] {
            guard let organization = node.mapping else {
                throw ConsentTermsError(location: place(node), message: "`organization:` is a mapping with `reference:` and/or `display:`")
            }
            for (key, value) in organization {
                guard let name = key.string, organizationKeys.contains(name), let string = value.string, !string.isEmpty else {
                    throw ConsentTermsError(location: place(key), message: "`organization:` takes `reference: Organization/<id>` and `display:` (texts)")
                }
                if name == "reference" {
                    guard string.range(of: "^Organization/[A-Za-z0-9.-]{1,64}$", options: .regularExpression) != nil else {
                        throw ConsentTermsError(location: place(value), message: "`reference:` is Organization/<id>")
                    }
                    terms.organizationReference = string
                } else {
                    terms.organizationName = string
                }
            }
        }
        return terms
    }

    /// The document's format (by its extension) and text.
    private static func readDocument(_ name: String, node: Node, termsFile: String, place: (Node) -> String) throws -> (String, String) {
        let folder = URL(fileURLWithPath: termsFile).deletingLastPathComponent()
        let path = name.hasPrefix("/") ? name : folder.appendingPathComponent(name).standardizedFileURL.path
        let format: String
        switch URL(fileURLWithPath: path).pathExtension.lowercased() {
        case "md", "markdown": format = "markdown"
        case "html", "htm": format = "html"
        default: throw ConsentTermsError(location: place(node), message: "`document:` is a Markdown (.md) or HTML (.html) file")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConsentTermsError(location: place(node), message: "`document:` \(path) cannot be read")
        }
        guard data.count <= maximumBytes, let text = String(data: data, encoding: .utf8), !text.isEmpty else {
            throw ConsentTermsError(location: place(node), message: "`document:` \(path) is not UTF-8 text of 1 to \(maximumBytes) bytes")
        }
        return (format, text)
    }

    /// Where a YAML syntax error is, and what it is.
    private static func syntaxProblem(_ error: YamlError, file: String) -> ConsentTermsError {
        switch error {
        case .scanner(_, let problem, let mark, _), .parser(_, let problem, let mark, _), .composer(_, let problem, let mark, _):
            return ConsentTermsError(location: "\(file):\(mark.line):\(mark.column)", message: "not YAML: \(problem)")
        case .duplicatedKeysInMapping(let duplicates, let context):
            return ConsentTermsError(
                location: "\(file):\(context.mark.line):\(context.mark.column)",
                message: "key '\(duplicates.first ?? "")' is given twice in one mapping")
        default:
            return ConsentTermsError(location: "\(file):1:1", message: "not YAML")
        }
    }
}

/// A consent terms file that cannot be used: where (file:line:column) and why.
public struct ConsentTermsError: Error, CustomStringConvertible, Equatable {
    public let location: String
    public let message: String
    public var description: String { "\(location): \(message)" }
}
