import Foundation

/// Consent terms files, a signed PDF, a signature PNG and the bodies an app posts to
/// `/carekit/v1/consents`, for the consent tests (issue 45).
public enum ConsentFixture {
    /// A 1x1 PNG (signature, IHDR, IDAT, IEND).
    public static let png = Data(base64Encoded: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==")!
    /// A PDF's bytes as far as the checks read them (`%PDF-`), with some content.
    public static let pdf = Data("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n".utf8)

    /// Writes `terms.yaml` and `consent.md` into `folder` and returns the terms file's path.
    @discardableResult
    public static func writeTerms(in folder: URL, id: String = "app-sharing", version: String = "1", required: Bool = false) throws -> String {
        try Data("# Sharing your care data\n\nYou agree that the app reads your care plan and sends back what you record.\n".utf8)
            .write(to: folder.appendingPathComponent("consent.md"))
        let yaml = """
            id: \(id)
            version: "\(version)"
            title: Sharing your care data with the app
            document: consent.md
            permits: [read-care-plan, write-outcomes]
            required: \(required)
            organization:
              display: Example Clinic

            """
        let path = folder.appendingPathComponent("terms.yaml")
        try Data(yaml.utf8).write(to: path)
        return path.path
    }

    /// The JSON body of a decision.
    public static func body(
        decision: String, termsID: String = "app-sharing", version: String = "1", date: String = "2026-03-01T09:30:00Z",
        signature: Data? = png, document: Data? = pdf, extra: [String: Any] = [:]
    ) -> Data {
        var object: [String: Any] = ["terms": ["id": termsID, "version": version], "decision": decision]
        if let signature { object["signature"] = ["name": "Ada Example", "date": date, "image": signature.base64EncodedString()] } else { object["date"] = date }
        if let document { object["document"] = document.base64EncodedString() }
        for (key, value) in extra { object[key] = value }
        return (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
    }
}
