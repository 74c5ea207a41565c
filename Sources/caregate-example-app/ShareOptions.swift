import AppClient
import ArgumentParser
import CareModel
import Foundation

/// `--share`: what the app's share button does (`POST /carekit/v1/shares`, Docs/sharing.md): the
/// patient's care-team report of a period, or a PDF, with a message, to one care-team contact.
struct ShareOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(
        "Share the report of --from to --to, or --document, with this care-team contact (its id or uuid) instead of recording an outcome (Docs/sharing.md).",
        valueName: "contact"))
    var share: String?

    @Option(name: .long, help: ArgumentHelp("With --share: the report's first day (YYYY-MM-DD).", valueName: "date"))
    var from: String?

    @Option(name: .long, help: ArgumentHelp("With --share: the report's last day, included (YYYY-MM-DD).", valueName: "date"))
    var to: String?

    @Option(name: .long, help: ArgumentHelp("With --share: a PDF to share instead of the report.", valueName: "file"))
    var document: String?

    @Option(name: .long, help: ArgumentHelp("With --share: the message to the clinician.", valueName: "text"))
    var message: String?

    func validate() throws {
        guard share != nil else {
            if from != nil || to != nil || document != nil || message != nil { throw ValidationError("--from, --to, --document and --message go with --share") }
            return
        }
        switch (from, to, document) {
        case (.some, .some, nil), (nil, nil, .some): return
        default: throw ValidationError("--share needs --from and --to (the report of those days) or --document FILE (a PDF)")
        }
    }

    /// Finds the contact among the patient's and shares.
    func send(with client: AppClient) async throws {
        guard let share else { return }
        let contacts = try await client.contacts()
        guard let contact = contacts.first(where: { $0.id == share || $0.uuid.uuidString.lowercased() == share.lowercased() }) else {
            throw ValidationError("--share: the patient has no contact '\(share)' (GET /carekit/v1/contacts lists them)")
        }
        let content: AppClient.ShareContent
        if let document {
            do {
                content = .document(try Data(contentsOf: URL(fileURLWithPath: document)))
            } catch {
                throw ValidationError("cannot read --document \(document): \(error.localizedDescription)")
            }
        } else {
            content = .report(from: from ?? "", to: to ?? "")
        }
        let result = try await client.share(contact: contact.uuid, content, message: message)
        print("shared with \(result.recipient) (share \(result.id)): \(result.created ? "queued" : "already queued"), \(result.state)")
    }
}
