/// The structural rules of a narrative `div` (R4 Narrative, constraints txt-1 and txt-2 and the xhtml
/// datatype notes) that need no XHTML schema: the content is one `div` element, has some
/// non-whitespace content, uses only the XML entities (`&amp;`, `&lt;`, `&gt;`, `&quot;`, `&apos;`)
/// and character references, holds no active content (script, forms, frames, event attributes), and
/// links only with web schemes.
enum XHTMLChecker {
    private static let xmlEntities: Set<String> = ["amp", "lt", "gt", "quot", "apos"]
    private static let forbiddenElements: Set<String> = [
        "script", "form", "input", "button", "select", "textarea", "iframe", "frame", "frameset", "object",
        "embed", "applet", "base", "link", "meta", "style",
    ]
    private static let linkSchemes: Set<String> = ["http", "https", "ftp", "mailto", "tel", "data"]

    /// The problems of a narrative div's XHTML text, each a message.
    static func problems(in xhtml: String) -> [String] {
        var problems: [String] = []
        let trimmed = xhtml.trimmingWhitespace()
        guard trimmed.hasPrefix("<div"), trimmed.hasSuffix("</div>") || trimmed.hasSuffix("/>") else {
            return ["the narrative must be a single xhtml <div> element"]
        }
        var hasContent = false
        var text = Substring(trimmed)
        while let open = text.firstIndex(where: { $0 == "<" || $0 == "&" }) {
            if text[text.startIndex..<open].contains(where: { !$0.isWhitespace }) { hasContent = true }
            if text[open] == "&" {
                let rest = text[text.index(after: open)...]
                guard let semicolon = rest.firstIndex(of: ";"), rest.distance(from: rest.startIndex, to: semicolon) <= 32 else {
                    problems.append("a bare '&' in the narrative must be written &amp;")
                    text = rest
                    continue
                }
                let name = String(rest[rest.startIndex..<semicolon])
                if !(name.hasPrefix("#") || xmlEntities.contains(name)) {
                    problems.append("invalid entity '&\(name);' in the narrative (XHTML knows only the XML entities)")
                }
                hasContent = true
                text = rest[rest.index(after: semicolon)...]
                continue
            }
            guard let close = text[open...].firstIndex(of: ">") else {
                problems.append("unterminated tag in the narrative")
                break
            }
            let tag = text[text.index(after: open)..<close]
            text = text[text.index(after: close)...]
            if tag.hasPrefix("/") || tag.hasPrefix("!") || tag.hasPrefix("?") { continue }
            let name = tag.prefix { !$0.isWhitespace && $0 != "/" }.lowercased()
            let localName = name.split(separator: ":").last.map(String.init) ?? name
            if forbiddenElements.contains(localName) {
                problems.append("the narrative may not contain <\(localName)> (active or external content)")
            }
            if localName == "img" { hasContent = true }
            for (attribute, value) in attributes(of: tag.dropFirst(name.count)) {
                let lowered = attribute.lowercased()
                if lowered.hasPrefix("on") {
                    problems.append("the narrative may not contain event attributes ('\(attribute)' on <\(localName)>)")
                } else if lowered == "href" || lowered == "src", ReferenceFormat.hasScheme(value),
                          let scheme = value.split(separator: ":").first?.lowercased(), !linkSchemes.contains(scheme) {
                    problems.append("hyperlink scheme '\(scheme)' in '\(value)' is not a valid hyperlinkable scheme")
                }
            }
        }
        if text.contains(where: { !$0.isWhitespace }) { hasContent = true }
        if !hasContent {
            problems.append("the narrative SHALL have some non-whitespace content (txt-2)")
        }
        return problems
    }

    /// `name="value"` pairs of a tag's attribute text (quotes single or double).
    private static func attributes(of text: Substring) -> [(String, String)] {
        var result: [(String, String)] = []
        var rest = text
        while let equals = rest.firstIndex(of: "=") {
            let name = rest[rest.startIndex..<equals].trimmingWhitespace()
            var afterEquals = rest[rest.index(after: equals)...].drop { $0.isWhitespace }
            guard let quote = afterEquals.first, quote == "\"" || quote == "'" else { break }
            afterEquals = afterEquals.dropFirst()
            guard let end = afterEquals.firstIndex(of: quote) else { break }
            result.append((String(name.split(whereSeparator: \.isWhitespace).last ?? ""), String(afterEquals[afterEquals.startIndex..<end])))
            rest = afterEquals[afterEquals.index(after: end)...]
        }
        return result
    }
}

fileprivate extension StringProtocol {
    /// The text without leading and trailing whitespace.
    func trimmingWhitespace() -> String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
