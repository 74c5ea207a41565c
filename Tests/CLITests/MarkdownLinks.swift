import Foundation

/// The relative links and heading anchors of a Markdown file, as GitHub renders them, for the tests that
/// keep the README and Docs/ from pointing at nothing.
struct MarkdownLinks {
    /// One link: its target as written (`Docs/store.md#files-beside-the-store`) and its line.
    struct Link: Equatable {
        let target: String
        let line: Int
    }

    /// The file's text with fenced code blocks blanked (their lines kept, so line numbers stay right).
    let prose: [String]

    init(text: String) {
        var inFence = false
        prose = text.components(separatedBy: "\n").map { line in
            if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") {
                inFence.toggle()
                return ""
            }
            return inFence ? "" : line
        }
    }

    /// The links that point into the repository: not `http(s):`, `mailto:` or other schemes. Inline code
    /// spans are left out (`[--unit U](...)` in code is not a link).
    func relativeLinks() throws -> [Link] {
        var links: [Link] = []
        let pattern = try NSRegularExpression(pattern: #"\]\(([^)\s]+)\)"#)
        for (index, line) in prose.enumerated() {
            let text = Self.withoutCodeSpans(line)
            let range = NSRange(text.startIndex..., in: text)
            for match in pattern.matches(in: text, range: range) {
                guard let targetRange = Range(match.range(at: 1), in: text) else { continue }
                let target = String(text[targetRange])
                if target.range(of: #"^[a-zA-Z][a-zA-Z0-9+.-]*:"#, options: .regularExpression) != nil { continue }
                links.append(Link(target: target, line: index + 1))
            }
        }
        return links
    }

    /// The anchors GitHub gives the file's headings (`## sync.yaml reference` -> `syncyaml-reference`),
    /// a repeated heading's later ones suffixed `-1`, `-2`...
    var anchors: Set<String> {
        var seen: [String: Int] = [:]
        var anchors: Set<String> = []
        for line in prose {
            guard let heading = line.range(of: #"^#{1,6} "#, options: .regularExpression) else { continue }
            let slug = Self.slug(String(line[heading.upperBound...]))
            let count = seen[slug, default: 0]
            anchors.insert(count == 0 ? slug : "\(slug)-\(count)")
            seen[slug] = count + 1
        }
        return anchors
    }

    /// GitHub's heading slug: lower case, punctuation other than `-` and `_` removed, spaces made `-`.
    static func slug(_ heading: String) -> String {
        let kept = heading.trimmingCharacters(in: .whitespaces).lowercased().unicodeScalars.filter { scalar in
            CharacterSet.alphanumerics.contains(scalar) || scalar == "-" || scalar == "_" || scalar == " "
        }
        return String(String.UnicodeScalarView(kept)).replacingOccurrences(of: " ", with: "-")
    }

    /// `line` without its inline code spans (`` `text` ``).
    static func withoutCodeSpans(_ line: String) -> String {
        line.replacingOccurrences(of: #"(`+)[^`].*?\1"#, with: "", options: .regularExpression)
    }
}
