import Foundation
import Hummingbird
import Insights

/// The little HTML the operator page is made of: every value that comes from the store goes through
/// ``escape(_:)``, in text and in attributes alike.
enum OperatorHTML {
    /// `&`, `<`, `>`, `"` and `'` as character references: safe in element text and in quoted attributes
    /// (the shared report's escaping).
    static func escape(_ text: String) -> String { SVGCharts.escape(text) }

    /// A whole page: `body` is HTML already escaped. No script: the page is read-only but for its forms.
    static func document(title: String, body: String) -> String {
        """
        <!DOCTYPE html>
        <html lang="en"><head><meta charset="utf-8"><title>\(escape(title))</title>
        <style>
        body { font-family: sans-serif; margin: 1.5em; color: #222; }
        table { border-collapse: collapse; margin-bottom: 1em; font-size: 0.9em; }
        th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: left; vertical-align: top; }
        th { background: #f0f0f0; }
        .notice { background: #eef6ee; border: 1px solid #9c9; padding: 0.5em; }
        .empty { color: #777; }
        </style></head><body>
        \(body)
        </body></html>
        """
    }

    /// A table of `rows` under `headers`, each cell escaped; `extra` adds one cell of ready HTML per row.
    static func table(_ headers: [String], _ rows: [[String]], extra: [String]? = nil) -> String {
        guard !rows.isEmpty else { return "<p class=\"empty\">None.</p>" }
        var html = "<table><tr>" + headers.map { "<th>\(escape($0))</th>" }.joined() + "</tr>"
        for (index, row) in rows.enumerated() {
            html += "<tr>" + row.map { "<td>\(escape($0))</td>" }.joined()
            if let extra { html += "<td>\(extra[index])</td>" }
            html += "</tr>"
        }
        return html + "</table>"
    }

    /// A form that POSTs to `action` with the CSRF proof, as one button.
    static func button(_ label: String, action: String, proof: String) -> String {
        "<form method=\"post\" action=\"\(escape(action))\"><input type=\"hidden\" name=\"csrf\" value=\"\(escape(proof))\">"
            + "<button type=\"submit\">\(escape(label))</button></form>"
    }

    /// A page as the answer: HTML, never cached, no script allowed.
    static func response(_ text: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status,
            headers: [
                .contentType: "text/html; charset=utf-8", .cacheControl: "no-store",
                .contentSecurityPolicy: "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
            ],
            body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// An instant as ISO 8601 in UTC, or an empty cell.
    static func date(_ date: Date?) -> String {
        guard let date else { return "" }
        return date.formatted(.iso8601)
    }
}
