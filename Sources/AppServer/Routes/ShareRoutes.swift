import CareModel
import Dispatch
import Foundation
import Hummingbird
import Insights
import Pipeline
import Store

/// `POST /carekit/v1/shares`: the token's patient shares their care-team report of a period, or a PDF
/// their app made, with a member of their care team, with a message (``ShareRequest``, Docs/sharing.md).
///
/// The share becomes a FHIR Communication from the patient to the Practitioner or PractitionerRole the
/// contact came from, with its Provenance (`ShareCommunication`), validated and queued in the outbox
/// (`PayloadOutbox`, kind `share`) in one transaction under the store's append lease; `caregate sync`
/// writes it to the FHIR server. The outbox entry is the share's record: its version uuid is derived from
/// the patient, the contact, what is shared and the message, so the same share submitted again is found,
/// not queued twice (201 the first time, 200 after, with the same id).
///
/// Refused, nothing stored: a contact that is not one of the patient's (404, as for one that does not
/// exist), one not on the care team (`friendsAndFamily`: 422 `not-care-team`), one that came from no
/// Practitioner or PractitionerRole (422 `no-recipient`), a bad period, a document too large or not a
/// PDF, a message too long.
struct ShareRoutes {
    let store: any AsyncAppStore
    let rules: InsightsRules
    let settings: ShareSettings

    func register(on group: RouterGroup<AppRequestContext>) {
        group.post("shares") { request, context -> Response in
            let patientID = try context.patientID()
            var buffer = ByteBuffer()
            for try await chunk in request.body {
                guard buffer.readableBytes + chunk.readableBytes <= context.maxUploadSize else {
                    throw APIError(.contentTooLarge, code: "too-large", message: "a share is at most \(context.maxUploadSize) bytes")
                }
                buffer.writeImmutableBuffer(chunk)
            }
            let share = try ShareRequest.read(Data(buffer: buffer))
            let target = try await store.read { try Self.target(of: share, patientID: patientID, in: $0) }
            if let known = try await store.outboxEntry(destination: OutboxEntry.provider, entityUUID: target.id) {
                context.auditNote.set("share: already queued")
                return try Self.answer(known, id: target.id, recipient: target.recipient, status: .ok)
            }
            let document = try await document(of: share, target: target, patientID: patientID)
            let now = Date()
            let communication = ShareCommunication(
                id: target.id, patientID: patientID, recipient: target.recipient, recipientName: target.recipientName, message: share.message,
                document: document, sent: now, generator: settings.generator)
            let entry: OutboxEntry
            do {
                // Validating a Communication that carries megabytes is CPU work: off the request's thread.
                entry = try await Self.offThread {
                    try PayloadOutbox.entry(.share, id: ShareCommunication.entityID(target.id), uuid: target.id, entries: communication.entries(), now: now)
                }
            } catch is PayloadOutbox.InvalidPayload {
                // A defect of ours or a contact's data the validator refuses: nothing is queued, nothing echoed.
                throw APIError(.unprocessableContent, code: "cannot-share", message: "this share cannot be written as valid FHIR; nothing was stored")
            }
            let (stored, created) = try await Self.enqueue(entry, in: store)
            context.auditNote.set(created ? "share: queued" : "share: already queued")
            return try Self.answer(stored, id: target.id, recipient: target.recipient, status: created ? .created : .ok)
        }
    }

    /// Who a share goes to, and its id.
    struct Target: Sendable {
        var id: UUID
        var recipient: String
        var recipientName: String?
        var contactID: String
        /// The report's days, for a report share.
        var period: DateInterval?
        var timeZone: TimeZone
    }

    /// The contact `share` names among the patient's own, checked to be on the care team and to have
    /// come from a Practitioner or PractitionerRole, and the share's derived id.
    private static func target(of share: ShareRequest, patientID: String, in store: any AppSyncStore) throws -> Target {
        guard let patient = try store.patients(EntityQuery(ids: [patientID])).first,
              let contact = try PatientData(store: store, patientID: patientID).contacts().first(where: { $0.metadata.uuid == share.contact })
        else { throw APIError(.notFound, code: "not-found", message: "no such contact") }
        guard contact.category == .careProvider else {
            let reason = contact.category == .friendsAndFamily
                ? "this contact is a friend or family member (friendsAndFamily), not on the care provider's side"
                : "this contact is not marked as a care provider"
            throw APIError(.unprocessableContent, code: "not-care-team", message: reason + ": a share goes to the patient's care team only")
        }
        guard let recipient = Self.recipient(of: contact) else {
            throw APIError(
                .unprocessableContent, code: "no-recipient",
                message: "this contact came from no FHIR Practitioner or PractitionerRole: there is no one on the FHIR server to write to")
        }
        let zone = patient.metadata.timezone
        var period: DateInterval?
        let content: String
        switch share.content {
        case .report(let from, let to):
            period = try ShareRequest.period(from: from, to: to, in: zone)
            content = "report|\(from)|\(to)"
        case .document(let data):
            content = "document|\(ContentHash.of(data))"
        }
        let name = [contact.name.namePrefix, contact.name.givenName, contact.name.familyName].compactMap { $0 }.joined(separator: " ")
        return Target(
            id: ShareCommunication.id(patientID: patientID, contactID: contact.id, content: content, message: share.message),
            recipient: recipient, recipientName: name.isEmpty ? nil : name, contactID: contact.id, period: period, timeZone: zone)
    }

    /// The `userInfo` key under which a care-team contact made from a Patient's care-team rules
    /// (Mappings/Patient.yaml `members:`) names the practitioner it stands for (`Practitioner/<id>`).
    static let careTeamMemberKey = "careTeam.member"

    /// `Practitioner/<id>` or `PractitionerRole/<id>`: the practitioner a care-team contact stands for
    /// (``careTeamMemberKey``), else the resource the contact was made from (its provenance), else the
    /// reference its id starts with (`Practitioner/<id>`, `Practitioner/<id>#...`); nil for any other
    /// contact (one the app made, a RelatedPerson's).
    static func recipient(of contact: Contact) -> String? {
        let candidates = [
            contact.metadata.userInfo?[careTeamMemberKey], contact.metadata.provenance.map { "\($0.fhirType)/\($0.fhirID)" },
            String(contact.id.prefix { $0 != "#" }),
        ]
        return candidates.compactMap { $0 }.first(where: isPractitionerReference)
    }

    /// `Practitioner/<id>` or `PractitionerRole/<id>`, with a FHIR id.
    static func isPractitionerReference(_ reference: String) -> Bool {
        let parts = reference.split(separator: "/", omittingEmptySubsequences: false)
        return parts.count == 2 && ["Practitioner", "PractitionerRole"].contains(String(parts[0])) && isFHIRID(parts[1])
    }

    /// FHIR's id: 1 to 64 of `A-Z a-z 0-9 - .`.
    static func isFHIRID(_ text: Substring) -> Bool {
        (1...64).contains(text.utf8.count) && text.utf8.allSatisfy { byte in
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
        }
    }

    /// The shared document: the app's PDF, or the care-team report of the period, made as `caregate
    /// patients report` makes it and printed (or as HTML without a printer), off the request's thread.
    private func document(of share: ShareRequest, target: Target, patientID: String) async throws -> ShareCommunication.Document {
        switch share.content {
        case .document(let data):
            return ShareCommunication.Document(data: data, contentType: "application/pdf", title: "Document shared by the patient")
        case .report(let from, let to):
            guard let period = target.period else { throw APIError.internal }
            let (rules, settings) = (rules, settings)
            let title = "Care-team report \(from) to \(to)"
            let input = try await store.read { store in
                try ReportInput.read(
                    generator: settings.generator, store: store, patientID: patientID, interval: period, timeZone: target.timeZone, rules: rules,
                    strategy: .checkingOutcomeExists)
            }
            return try await Self.offThread {
                let report = CareTeamReport.make(input)
                guard let printPDF = settings.printPDF else {
                    return ShareCommunication.Document(data: Data(ReportHTML.render(report).utf8), contentType: "text/html; charset=utf-8", title: title)
                }
                do {
                    return ShareCommunication.Document(data: try printPDF(report), contentType: "application/pdf", title: title)
                } catch {
                    throw APIError(.serviceUnavailable, code: "busy", message: "the report could not be printed; try again later")
                }
            }
        }
    }

    /// Runs `body`, which may block for seconds (a report printed) or work long (a large Communication
    /// validated), on a thread of its own.
    private static func offThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result(catching: body)) }
        }
    }

    /// Queues `entry` unless an entry of its uuid is queued already (a share submitted twice at once),
    /// under the append lease; the entry stored, and whether this call queued it.
    private static func enqueue(_ entry: OutboxEntry, in store: any AsyncAppStore) async throws -> (OutboxEntry, Bool) {
        do {
            return try await store.write { store in
                try store.withAppendLease("caregate serve share") {
                    if let known = try store.outboxEntry(destination: OutboxEntry.provider, entityUUID: entry.entityUUID) { return (known, false) }
                    var batch = StoreBatch(date: entry.createdDate)
                    batch.enqueue(entry)
                    try store.apply(batch)
                    return (try store.outboxEntry(destination: OutboxEntry.provider, entityUUID: entry.entityUUID) ?? entry, true)
                }
            }
        } catch let error as StoreError {
            throw SyncRoutes.refusal(error)
        }
    }

    /// The answer: the share's id, its recipient, and where it is (queued, sent, written back).
    private static func answer(_ entry: OutboxEntry, id: UUID, recipient: String, status: HTTPResponse.Status) throws -> Response {
        let body = ShareAnswer(
            id: id.canonicalString.lowercased(), recipient: recipient, state: entry.state.rawValue, writtenBack: entry.state == .acknowledged)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return JSONResponse.make(try encoder.encode(body), status: status)
    }
}

/// The 201/200 answer of a share.
struct ShareAnswer: Encodable {
    /// The share's id: the Communication's identifier value (`urn:caregate:share`).
    var id: String
    /// The Practitioner or PractitionerRole it goes to.
    var recipient: String
    /// The outbox state: pending, sent, acknowledged or failed.
    var state: String
    /// Whether the FHIR server has taken it.
    var writtenBack: Bool
}
