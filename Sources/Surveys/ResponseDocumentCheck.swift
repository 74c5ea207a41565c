import FHIRCore
import FHIRValidation
import Foundation

/// The survey pass of `caregate validate`: finds the Questionnaires (and ValueSets) of some sources, and
/// checks each QuestionnaireResponse of the sources against the Questionnaire it names. Results are
/// keyed by the label ``DocumentValidator`` gives the resource (`file`, or `file:line` for NDJSON), so
/// that the command adds them to that resource's report.
///
/// Only sources whose bytes mention `Questionnaire` are parsed again; standard input, which can be read
/// once, is left to the caller (who may read it into memory first).
public enum ResponseDocumentCheck {
    /// The Questionnaires of `sources`, each given every ValueSet of `sources`.
    public static func questionnaires(in sources: [FHIRInput.Source]) -> [Questionnaire] {
        var resources: [Element] = []
        forEachResource(in: sources, mentioning: "Questionnaire") { _, resource in
            if resource.resourceType == "Questionnaire" || resource.resourceType == "ValueSet" || resource.resourceType == "Bundle" {
                resources.append(resource)
            }
        }
        return QuestionnaireCatalog.reading(resources)
    }

    /// The issues of each QuestionnaireResponse in `sources` (top level or a Bundle entry), by label.
    /// `fallback` is the canonical for responses that name none; with `reportsMissing`, a response
    /// whose Questionnaire is not found gets a warning saying so.
    public static func check(_ sources: [FHIRInput.Source], validator: QuestionnaireResponseValidator, fallback: String?,
                             reportsMissing: Bool) -> [String: [ValidationIssue]] {
        var results: [String: [ValidationIssue]] = [:]
        forEachResource(in: sources, mentioning: "QuestionnaireResponse") { label, resource in
            var responses: [(Element, String)] = []
            if resource.resourceType == "QuestionnaireResponse" {
                responses.append((resource, "QuestionnaireResponse"))
            } else if resource.resourceType == "Bundle" {
                for (index, entry) in resource.children(named: "entry").enumerated() {
                    if let inner = entry.child(named: "resource"), inner.resourceType == "QuestionnaireResponse" {
                        responses.append((inner, "Bundle.entry[\(index)].resource"))
                    }
                }
            }
            for (response, path) in responses {
                if let issues = validator.validate(response, path: path, fallback: fallback) {
                    results[label, default: []] += issues
                } else if reportsMissing {
                    let named = response.childValue("questionnaire")
                    let message = named.map { "the Questionnaire \($0) is not in the input or the --questionnaires folder: the answers are not checked against it" }
                        ?? "the response names no Questionnaire (give one with --questionnaire): the answers are not checked against one"
                    results[label, default: []].append(ValidationIssue(severity: .warning, code: .notFound, diagnostics: message, expression: "\(path).questionnaire"))
                }
            }
        }
        return results
    }

    /// Every resource of the sources whose bytes contain `word`, with its label.
    private static func forEachResource(in sources: [FHIRInput.Source], mentioning word: String, _ body: (String, Element) -> Void) {
        let needle = Data(word.utf8)
        for source in sources {
            switch source {
            case .standardInput: continue
            case .file(let path):
                guard let bytes = try? Data(contentsOf: URL(fileURLWithPath: path), options: .mappedIfSafe), bytes.range(of: needle) != nil else { continue }
            case .memory(_, let bytes):
                guard bytes.range(of: needle) != nil else { continue }
            }
            try? FHIRInput.forEachEntry(of: source) { entry, _ in
                guard case .success(let resource) = entry.result else { return }
                body(entry.line.map { "\(source.description):\($0)" } ?? source.description, resource)
            }
        }
    }
}
