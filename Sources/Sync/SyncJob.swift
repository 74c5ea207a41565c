import FHIR
import Foundation
import Insights
import Mapping
import Pipeline
import Store

/// The sync job: pull each configured resource type from the server by search, the changes since the
/// last run (a `_lastUpdated` cursor per type, kept in the store and moved only once what was pulled is
/// imported), through the import path; then push the outbox as transaction Bundles.
///
/// A run killed at any moment resumes from the last committed cursors: a page imported twice changes
/// nothing the second time, and an outcome pushed twice is the same Observation.
///
/// Set up by ``Pipeline/Gateway/syncJob(configuration:client:)``: its imports and pushes are the
/// gateway's jobs.
public final class SyncJob {
    public let configuration: SyncConfiguration
    /// The store, mappings and options every import and push of the job runs with.
    public let gateway: Gateway
    public let client: FHIRClient
    public var store: any Store { gateway.store }
    /// Progress lines (counts only), for standard error.
    public var progress: ((String) -> Void)?
    /// Pull and map, and say what would change, but write nothing, move no cursor and push nothing.
    public var dryRun = false
    /// Prints a care-team report to PDF, for `reports:` (the command sets headless Chromium).
    public var printPDF: ((CareTeamReport) throws -> Data)?
    /// Names the program in the reports' header and Provenance.
    public var generator = "CareGate"
    /// The run's id (what its log lines carry), named by the audit trail's entries of its pushes.
    public var runID: String?
    /// The name this job's claims take on a store whose sync workers share the pulls and the outbox
    /// (PostgreSQL): unique among live workers.
    public var workerName = ClaimWorker.name()
    /// How long a claim of a pull lasts unrenewed (renewed while the run pulls and imports): how long a
    /// stuck worker's types wait for another (a worker whose process died gives its claims up at once).
    public var pullLease = PullClaims.defaultLease
    /// How long a claim of outbox entries lasts (a Bundle's round trip): how long a stuck worker's
    /// entries wait for another (a worker whose process died gives its claims up at once).
    public var pushLease = OutboxClaimSettings.defaultLease

    /// The audit of this run's pushes to the server (``PushAudit``): subject the user running the job.
    var pushAudit: PushAudit {
        PushAudit(recipient: FHIRClient.withoutCredentials(configuration.server), runID: runID)
    }

    /// Where survey tasks' Questionnaires are looked for beyond the pulled pages and the store: the
    /// `questionnaires:` folder, then the server (a folder standing for the server is read as one).
    /// The run's coverage (`coverage: true`): what the imports of one run read, across its pages.
    var runCoverage: CoverageCollector?
    private lazy var questionnaireLookup: ServerQuestionnaires = {
        let folders = [configuration.questionnaireFolder, configuration.serverIsFolder ? configuration.server.path : nil]
            .compactMap { $0 }.map(QuestionnaireFolder.init(path:))
        return ServerQuestionnaires(client: configuration.serverIsFolder ? nil : client, folders: folders)
    }()

    init(configuration: SyncConfiguration, gateway: Gateway, client: FHIRClient) {
        self.configuration = configuration
        self.gateway = gateway
        self.client = client
    }

    public func run(now: Date = Date()) throws -> SyncReport {
        let started = Date()
        Self.removeOldScratchFolders()
        client.resetRetries()
        var report = SyncReport(server: FHIRClient.withoutCredentials(configuration.server))
        runCoverage = configuration.coverage && !dryRun ? CoverageCollector() : nil
        if configuration.serverIsFolder {
            try importFolder(into: &report)
        } else if configuration.bulk {
            try pullBulk(into: &report)
        } else {
            try pullAll(into: &report)
        }
        report.pullSeconds = Date().timeIntervalSince(started) - report.importSeconds
        keepCoverage(of: report)
        if let terms = configuration.consentTerms, !dryRun, !configuration.serverIsFolder {
            do {
                let consents = try importProviderConsents(terms, now: now)
                report.notes.append("consents: \(consents.read) on the server name terms \(terms.id), \(consents.recorded) recorded as decisions")
            } catch let error as FHIRClientError {
                report.problems.append("reading Consents: \(error)")
            }
        }
        let pushStarted = Date()
        let pushes = try !dryRun && gateway.mappings().export != nil
        if pushes, let folder = configuration.pushFolder {
            let exporter = try gateway.exporter()
            exporter.consentHold = consentHold
            let written = try exporter.run(to: .folder(folder), now: now)
            report.held = written.notTaken.filter { $0.retry && $0.reason.hasPrefix(ConsentGate.holdPrefix) }.count
            report.pushed = written.observations
            report.acknowledged = written.sent
            report.deadLetters = written.refused.count
            try pushAudit.recordFolderExport(written.observations, to: folder, in: store, now: now)
            progress?("wrote \(written.observations) Observation(s)" + (written.path.map { " to \($0)" } ?? ""))
        } else if pushes {
            // A server without transactions takes batch Bundles (each entry on its own).
            let transactions = try supportsTransactions()
            do {
                let exporter = try gateway.exporter { if !transactions { $0.bundleType = .batch } }
                exporter.consentHold = consentHold
                let pushed = try exporter.push(
                    to: FHIRServerReceiver(client: client), batchSize: configuration.batchSize, now: now, audit: pushAudit,
                    claims: OutboxClaimSettings(worker: workerName, lease: pushLease))
                report.pushed = pushed.observations
                report.acknowledged = pushed.acknowledged
                report.refused = pushed.notTaken.filter { !$0.retry }.count
                // Outcomes held for consent wait on purpose: counted apart, not as failures.
                let holdReason = ConsentGate(terms: configuration.consentTerms).holdReason
                report.held = pushed.notTaken.filter { $0.retry && $0.reason == holdReason }.count
                report.later = pushed.notTaken.filter(\.retry).count - report.held
                report.deadLetters = pushed.refused.count
                report.requests = pushed.requests
                report.problems += pushed.unanswered.map { "pushing: \($0)" }
                progress?("pushed \(pushed.acknowledged) of \(pushed.observations) outcome(s)")
            } catch let error as FHIRClientError {
                report.problems.append("pushing: \(error)")
            }
        }
        if let reports = configuration.reports {
            if dryRun {
                report.notes.append("reports: none made or sent in a dry run")
            } else {
                try pushReports(reports, now: now, into: &report)
            }
        }
        if configuration.auditEvents {
            if dryRun {
                report.notes.append("audit-events: none queued or sent in a dry run")
            } else {
                try queueAuditEvents(now: now, into: &report)
            }
        }
        // Consent decisions, shares and AuditEvents carry their own resources: no export mapping needed.
        if !dryRun, configuration.pushFolder == nil {
            try pushPayloads(now: now, into: &report)
        }
        if !dryRun {
            // What failed before and is not due yet: the run is not done while it waits. On a store whose
            // workers push side by side, another worker's entries may have failed due at once since this
            // run began (a takeover of a dead worker's claims): what is due by the run's end is not waiting.
            let horizon = store is any OutboxClaimingStore ? max(now, Date()) : now
            let waiting = try store.outboxEntries(in: .failed, limit: .max).filter {
                ($0.nextAttemptDate ?? .distantPast) > horizon && !($0.lastError?.hasPrefix(ConsentGate.holdPrefix) ?? false)
            }
            report.waiting = waiting.count
            report.nextAttempt = waiting.compactMap(\.nextAttemptDate).min()
        }
        // What needs a person: the dead letters of this run and earlier ones, until a replay resolves them.
        report.deadLettersWaiting = try store.waitingDeadLetterCount()
        report.pushSeconds = Date().timeIntervalSince(pushStarted)
        report.retries = client.retries
        report.seconds = Date().timeIntervalSince(started)
        return report
    }

    /// Makes the care-team report of each due, completed period of each configured patient that has
    /// none queued yet, queues it in the outbox, and pushes the queued reports (``ReportOutbox``): after
    /// the outcomes, through the same outbox states, receipts and retries.
    private func pushReports(_ reports: SyncConfiguration.Reports, now: Date, into report: inout SyncReport) throws {
        var counts = SyncReport.Reports()
        defer { report.reports = counts }
        guard let printPDF else {
            report.problems.append("reports: no PDF printer was given to the job")
            return
        }
        let zone = gateway.options.timeZone
        let rules: InsightsRules
        do {
            rules = try reports.rulesFile.map(InsightsRules.load(path:)) ?? InsightsRules.defaults()
        } catch {
            report.problems.append("reports: \(error)")
            return
        }
        let settings = ReportSettings(
            patients: reports.patients, frequency: reports.frequency, since: reports.since.flatMap { FHIRDateText.date($0, in: zone) },
            timeZone: zone, rules: rules)
        let outbox = ReportOutbox(store: store, settings: settings, generator: generator, printPDF: printPDF)
        let queued = try outbox.enqueueDue(now: now)
        (counts.made, counts.alreadyQueued, counts.withoutData) = (queued.queued, queued.alreadyQueued, queued.empty)
        report.problems += queued.problems
        progress?("reports: \(queued.queued) made, \(queued.alreadyQueued) queued before")
        if let sent = try pushPayloads(of: .report, now: now, into: &report) {
            (counts.sent, counts.acknowledged, counts.refused, counts.later) = (sent.sent, sent.acknowledged, sent.refused, sent.later)
        }
    }

    /// Queues the audit trail's entries not queued before as AuditEvents (``AuditEventOutbox``);
    /// ``pushPayloads(now:into:)`` sends them with the other payload entries.
    private func queueAuditEvents(now: Date, into report: inout SyncReport) throws {
        guard let trail = store as? any AppSyncStore else {
            report.problems.append("audit-events: the store has no audit trail")
            return
        }
        let queued = try AuditEventOutbox(store: trail).enqueueNew(now: now)
        progress?("audit-events: \(queued.queued) queued, \(queued.alreadyQueued) queued before")
        if queued.truncated {
            report.problems.append("audit-events: more than \(AuditEventOutbox.scanLimit) new audit entries; older ones are queued at no run")
        }
    }

    /// Pushes the other entries that carry their own resources (`PayloadOutbox`: consent decisions,
    /// shares), kind by kind, through the same outbox states, receipts and retries as outcomes. Reports
    /// are pushed by ``pushReports(_:now:into:)``, when the configuration asks for them.
    private func pushPayloads(now: Date, into report: inout SyncReport) throws {
        for kind in PayloadOutbox.Kind.allCases where kind != .report {
            if let sent = try pushPayloads(of: kind, now: now, into: &report), sent.sent > 0 {
                report.payloads[kind.rawValue] = sent
            }
        }
    }

    /// Pushes the due entries of `kind` whose patient's data does not wait for consent, a few to a Bundle
    /// (they may carry PDFs); adds the requests, problems and progress to `report`, and returns what was
    /// sent, or nil when the server could not be asked.
    private func pushPayloads(of kind: PayloadOutbox.Kind, now: Date, into report: inout SyncReport) throws -> SyncReport.Sent? {
        let what = kind == .report ? "reports" : "\(kind.rawValue) entries"
        do {
            let bundleType: ExportOptions.BundleType = try supportsTransactions() ? .transaction : .batch
            let pushed = try PayloadOutbox(store: store).push(
                to: FHIRServerReceiver(client: client), batchSize: min(configuration.batchSize, 10), bundleType: bundleType, now: now,
                audit: pushAudit, selecting: { PayloadOutbox.kind(of: $0) == kind && !self.isHeld($0) })
            var sent = SyncReport.Sent()
            sent.sent = pushed.observations
            sent.acknowledged = pushed.acknowledged
            sent.refused = pushed.notTaken.filter { !$0.retry }.count
            sent.later = pushed.notTaken.filter(\.retry).count
            report.requests += pushed.requests
            report.problems += pushed.unanswered.map { "pushing \(what): \($0)" }
            if kind == .report {
                progress?("pushed \(pushed.acknowledged) of \(pushed.observations) report(s)")
            } else if pushed.observations > 0 {
                progress?("pushed \(pushed.acknowledged) of \(pushed.observations) \(kind.rawValue) entr\(pushed.observations == 1 ? "y" : "ies")")
            }
            return sent
        } catch let error as FHIRClientError {
            report.problems.append("pushing \(what): \(error)")
            return nil
        }
    }

    /// Why the entries of a patient wait, under consent terms that say `required: true` (``ConsentGate``):
    /// nil for a patient who agreed (in the app, or by a Consent the server holds), and without such terms.
    private var consentHold: (@Sendable (String) -> String?)? {
        let gate = ConsentGate(terms: configuration.consentTerms)
        return gate.isActive ? gate.hold(in: store) : nil
    }

    /// Whether a payload entry waits for its patient's consent: a report (`Patient/<id>/<from>/<to>`), a
    /// share (its Communication's subject) or an AuditEvent (its patient entity) of a patient without it
    /// does (a share made before a withdrawal waits for a new agreement); consent decisions never wait,
    /// nor entries that name no patient.
    private func isHeld(_ entry: OutboxEntry) -> Bool {
        guard let hold = consentHold else { return false }
        switch PayloadOutbox.kind(of: entry) {
        case .report:
            let parts = entry.entityID.split(separator: "/")
            guard parts.count >= 2 else { return false }
            return hold("Patient/\(parts[1])") != nil
        case .share, .audit:
            return PayloadOutbox.patientReference(of: entry).map { hold($0) != nil } ?? false
        default:
            return false
        }
    }

    /// Pulls every configured type (each page of `_lastUpdated >= cursor`, oldest first, held in memory:
    /// nothing of a patient's goes to disk outside the store), imports all of it at once, so that
    /// references between the types resolve as in a direct import of the same resources, and only then
    /// moves the cursors (and the cohort's membership), in one transaction. A run stopped before that,
    /// or whose import the store failed, pulls the same pages again next time. A type whose pages held
    /// entries of another type keeps its cursor too, and the report says so.
    ///
    /// On a store whose sync workers split the pulls (PostgreSQL), each type is claimed before its pull
    /// (SyncJob+Partitions.swift): a type another worker holds is left to it, with every type after it
    /// (an import needs the types before it), noted in the report; the cursors move only under the
    /// claims, which are released when the run is done.
    private func pullAll(into report: inout SyncReport) throws {
        var cursors: [SyncCheckpoint] = []
        let claims = pullClaims()
        defer { claims?.releaseAll() }
        var skipping = false
        var pages: [FHIRInput.Source] = []
        let members = try cohortMembers()
        if let members {
            progress?("cohort: \(members.current.count) patient(s), \(members.current.filter { !members.known.contains($0) }.count) new")
        }
        // A run that pulls the Patients or a care-team type from a cursor (not everything) completes the
        // care-team input of the patients it touches (SyncJob+CareTeam.swift). Decided from the cursors
        // the pulls themselves read: another run may move them while this one pulls, and a Patient
        // pulled again without its Encounters would lose its care team.
        let teamTypes = try careTeamTypes()
        var scope = CareTeamScope()
        var incremental = false
        for type in configuration.resources {
            guard try claimPull(of: type, claims: claims, skipping: &skipping) else {
                report.notes.append("\(type): pulled by another worker")
                continue
            }
            do {
                let cursor = try store.checkpoint(server: checkpointServer, resourceType: type)?.cursor
                if cursor != nil, type == "Patient" || teamTypes.contains(type) { incremental = true }
                let (pulled, newest, held, foreign) = try pull(
                    type, from: cursor, members: members, scope: &scope, teamTypes: teamTypes, claims: claims)
                report.pulled[type] = pulled
                pages += held
                if !foreign.isEmpty {
                    let counts = foreign.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
                    report.problems.append("pulling \(type): the search's pages held entries of another type (\(counts)), which a search for \(type) does not answer; they were not imported, and the cursor of \(type) stays where it was")
                } else if let newest {
                    cursors.append(SyncCheckpoint(server: checkpointServer, resourceType: type, cursor: newest))
                }
            } catch let error as FHIRClientError {
                report.problems.append("pulling \(type): \(error)")
            }
        }
        if incremental, !scope.patients.isEmpty {
            do {
                let completing = try careTeamPages(scope, types: teamTypes)
                progress?("care teams: \(scope.patients.count) patient(s) touched, \(completing.count) page(s) pulled in full")
                pages += completing
            } catch let error as FHIRClientError {
                report.problems.append("pulling the care teams' resources: \(error)")
            }
        }
        if !pages.isEmpty { try importPulled(pages, into: &report) }
        // A type that failed keeps its cursor. The members count as pulled only when every type went
        // through this run; until then a new member is pulled in full again (and found unchanged where it was).
        let cohort = members.map { SyncCheckpoint(server: checkpointServer, resourceType: Self.cohortCheckpoint, cursor: $0.current.joined(separator: ",")) }
        try moveCursors(cursors, cohort: skipping ? nil : cohort, claims: claims, into: &report)
    }

    /// The key the cursors are kept under: pulling a cohort's data sees less than pulling everyone's,
    /// so the two keep cursors of their own.
    var checkpointServer: String {
        FHIRClient.withoutCredentials(configuration.server) + (configuration.cohort == nil ? "" : " cohort")
    }

    /// The checkpoint row holding the cohort's members at the last run (ids, comma-separated).
    static let cohortCheckpoint = "#cohort"

    /// Whether the first lines of the NDJSON file at `path` (its first 64 KiB) hold JSON objects of which
    /// none names a `resourceType`.
    static func namesNoResourceType(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        let head = (try? handle.read(upToCount: 64 << 10)) ?? Data()
        let lines = head.split(separator: UInt8(ascii: "\n")).dropLast(head.count == 64 << 10 ? 1 : 0)
        let objects = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0)) as? [String: Any] }
        return !objects.isEmpty && objects.count == lines.filter({ !$0.allSatisfy { $0 == 32 || $0 == 13 } }).count
            && objects.allSatisfy { $0["resourceType"] == nil }
    }

    /// Removes the scratch folders of pulled pages that earlier CareGate builds wrote to the temporary folder
    /// (`caregate-sync-<uuid>`) and left behind when it was killed: they hold patient data. Pages stay in
    /// memory now, so any such folder is an old build's; one written to in the last hour may still be in
    /// use by an old build running beside this one, and is left to a later run.
    static func removeOldScratchFolders() {
        let temporary = FileManager.default.temporaryDirectory
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: temporary.path) else { return }
        for name in names where name.hasPrefix("caregate-sync-") {
            let folder = temporary.appendingPathComponent(name)
            let changed = (try? FileManager.default.attributesOfItem(atPath: folder.path)[.modificationDate] as? Date) ?? .distantPast
            guard Date().timeIntervalSince(changed) > 3600 else { continue }
            try? FileManager.default.removeItem(at: folder)
        }
    }

    /// A folder as the provider: the configured types of every file of it imported (what did not change
    /// is found unchanged). An NDJSON file none of whose first lines names a resourceType is not FHIR
    /// data (a Bulk Data client's own log, for one): it is left out, and the report says so.
    private func importFolder(into report: inout SyncReport) throws {
        let sources = FHIRInput.sources(for: [configuration.server.path]).filter { source in
            guard case .file(let path) = source, path.lowercased().hasSuffix(".ndjson"), Self.namesNoResourceType(path) else { return true }
            report.notes.append("\(path): not FHIR data (no line names a resourceType), left out")
            return false
        }
        for (type, counts) in try importing(sources, only: Set(configuration.resources), into: &report).byType
        where configuration.resources.contains(type) {
            var pulled = SyncReport.Pulled()
            pulled.resources = counts.total
            pulled.record(counts)
            report.pulled[type] = pulled
        }
    }

    /// The pulled pages or files through the import path, their counts and time in the report.
    func importPulled(_ sources: [FHIRInput.Source], into report: inout SyncReport) throws {
        for (type, counts) in try importing(sources, into: &report).byType {
            report.pulled[type, default: SyncReport.Pulled()].record(counts)
        }
    }

    /// `sources` through the gateway's import (a dry run writes nothing); the import's time goes into
    /// `report`.
    func importing(_ sources: [FHIRInput.Source], only types: Set<String>? = nil, into report: inout SyncReport) throws -> ImportReport {
        let lookup = questionnaireLookup
        let imported = try gateway.importer(dryRun: dryRun, coverage: runCoverage) {
            $0.resourceTypes = types
            $0.questionnaireLookup = lookup
        }.run(sources)
        report.importSeconds += imported.seconds
        return imported
    }

    /// Whether the server's capability statement lists the `transaction` interaction.
    private func supportsTransactions() throws -> Bool {
        let statement = try client.capabilities()
        return statement.children(named: "rest").contains { rest in
            rest.children(named: "interaction").contains { $0.childValue("code") == "transaction" }
        }
    }
}
