import FileSafety
import Foundation
import FHIRCore
import Pipeline
import Store
import Yams

/// What `caregate sync --config FILE` reads (YAML):
///
/// ```yaml
/// server: http://127.0.0.1:8080/fhir      # the provider's FHIR base URL, or a folder of FHIR files
/// push-to: exports/                        # optional: write the outbox to this folder instead
/// store: /srv/caregate/caregate.sqlite     # optional: the store (--store wins; else $CAREGATE_STORE, caregate.sqlite)
/// auth:                                    # optional: one of
///   token-env: CAREGATE_TOKEN              #   a bearer token in this environment variable
///   token-file: /etc/caregate/token        #   a bearer token in this file
///   smart-client-id: caregate              #   SMART Backend Services, with
///   smart-key: /etc/caregate/key.pem       #   the client's private key (P-384 or RSA, PEM)
/// patients:                                # optional: only these patients' data; one of
///   ids: [pat-1, pat-2]                    #   patient ids
///   group: Group/diabetes-program          #   the members of a Group
///   search: address-state=MA&active=true   #   the patients a Patient search finds
/// resources: [Patient, Practitioner, PractitionerRole, CarePlan, MedicationRequest, Goal, Observation]
/// bulk: false                              # true: pull through Bulk Data $export instead of searches
/// page-size: 100                           # resources per search page
/// batch-size: 100                          # outcomes per pushed Bundle
/// time-zone: America/Chicago               # for times without an offset
/// questionnaires: questionnaires/          # optional: a folder of Questionnaires survey tasks ask
/// consent-terms: terms.yaml                # optional: the consent terms (Docs/consent.md): required: true holds back writes
/// interval: 5m                             # between runs when not --once (s, m or h; a number is seconds)
/// max-retries: 100                         # retries per run, all requests together (each: up to 4)
/// request-timeout: 30                      # seconds a request may wait for the server's next byte
/// max-response-mb: 256                     # the largest answer read (a page, a Bulk Data file), MiB
/// run-timeout: 3600                        # seconds a run's requests may take in all; later ones fail
/// reports:                                 # optional: push care-team reports (a server, not a folder)
///   patients: all                          #   every patient of the store, or a list of ids [pat-1, pat-2]
///   every: weekly                          #   weekly (Monday-Sunday), monthly, or a number of days (14)
///   since: 2026-11-02                      #   the first day reported; default: the first run's last completed period
///   rules: insights.yaml                   #   optional: a rules file instead of the built-in one
/// ```
///
/// Every setting is described in Docs/sync-job.md (a test checks it against ``acceptedSettings``).
/// Relative paths (a folder as the server, `push-to`, `token-file`, `smart-key`) are read from the
/// configuration file's own folder, so a configuration means the same wherever the job starts.
public struct SyncConfiguration: Sendable, Equatable {
    /// Whose data is pulled: every patient's when there is no cohort.
    public enum Cohort: Sendable, Equatable {
        /// These patient ids.
        case ids([String])
        /// The members of `Group/<id>`.
        case group(String)
        /// The patients a `Patient?<query>` search finds.
        case search(String)
    }

    /// The FHIR base URL, or a file URL for a folder of FHIR files standing for the server (what a Bulk
    /// Data export leaves on disk: JSON, XML, NDJSON).
    public var server: URL
    /// A folder the outbox is written to (as by `caregate export --to DIR`) instead of the server;
    /// required when the server is a folder.
    public var pushFolder: String?
    /// A folder of FHIR files whose Questionnaires survey tasks may ask (`questionnaires:`), looked in
    /// before the server when neither the pulled pages nor the store hold one.
    public var questionnaireFolder: String?
    /// The consent terms (`consent-terms:`, Docs/consent.md): with `required: true`, nothing of a patient
    /// without consent is written back but their consent decisions.
    public var consentTerms: ConsentTerms?
    public var auth = AuthorizationSettings()
    /// The store the job writes (`store:`): a SQLite file (relative to the configuration's folder) or a
    /// `postgres://` URL; nil: `--store`, `CAREGATE_STORE` or `caregate.sqlite` names it.
    public var store: StoreLocation?

    /// Whether the provider is a folder rather than a server.
    public var serverIsFolder: Bool { server.isFileURL }
    public var resources: [String] = SyncConfiguration.defaultResources
    public var pageSize = 100
    public var batchSize = 100
    public var timeZone: String?
    public var cohort: Cohort?
    /// Pull through a Bulk Data `$export` (system level, or the Group's) rather than by searches.
    public var bulk = false
    /// Seconds between runs when the job keeps running (no `--once`).
    public var interval: TimeInterval = 300
    /// Retries per run, all requests together.
    public var maxRetries = 100
    /// Seconds a request may wait for the server's next byte (the whole exchange may take four times it).
    public var requestTimeout = 30
    /// The largest answer read, in MiB: a larger one fails that request with a clear error.
    public var maxResponseMiB = 256
    /// Seconds all of a run's requests may take together: past it, the next request fails at once.
    public var runTimeout = 3600

    /// Whether the job queues each new entry of the app API's audit trail as a BALP AuditEvent and pushes
    /// it through the outbox (`audit-events: true`; a server, not a folder). Docs/audit-events.md.
    public var auditEvents = false
    /// Whether each run notes the source elements no mapping reads and keeps that coverage in the store
    /// for the operator page (`coverage: true`; as `caregate import --coverage` does). Docs/operations.md.
    public var coverage = false

    /// The care-team reports the job pushes after the outcomes (`reports:`); nil: none.
    public var reports: Reports?

    /// `reports:`: whose care-team reports the job makes and pushes, how often, and from when. Each
    /// completed period (in the configuration's `time-zone`) of each patient is reported once: a
    /// DocumentReference with the PDF (printed by headless Chromium) and its Provenance.
    public struct Reports: Sendable, Equatable {
        /// Patient ids of the store; nil: all of them.
        public var patients: [String]?
        public var frequency: ReportFrequency
        /// The first day reported (`YYYY-MM-DD` in the configuration's time zone); nil: the last
        /// completed period at the first run, and every period after it at later runs.
        public var since: String?
        /// A rules file (insights.yaml format), the path resolved; nil: the built-in rules.
        public var rulesFile: String?

        public init(patients: [String]?, frequency: ReportFrequency, since: String? = nil, rulesFile: String? = nil) {
            self.patients = patients
            self.frequency = frequency
            self.since = since
            self.rulesFile = rulesFile
        }
    }

    static let reportKeys: Set<String> = ["patients", "every", "since", "rules"]

    /// What the default mappings read, in an order where what is referred to comes first.
    /// (ServiceRequests: measurement orders and survey requests; Tasks: SDC survey tasks;
    /// QuestionnaireResponses: answers given in clinic; Encounters: who saw the patient, for the care team.)
    public static let defaultResources = [
        "Patient", "Practitioner", "PractitionerRole", "RelatedPerson", "CareTeam", "Encounter", "Goal", "MedicationRequest", "ServiceRequest",
        "CarePlan", "Task", "Observation", "QuestionnaireResponse",
    ]

    static let keys: Set<String> = [
        "server", "push-to", "auth", "patients", "resources", "bulk", "page-size", "batch-size", "time-zone", "interval", "max-retries",
        "request-timeout", "max-response-mb", "run-timeout", "reports", "questionnaires", "consent-terms", "audit-events", "coverage", "store",
    ]
    static let authKeys: Set<String> = ["token-env", "token-file", "smart-client-id", "smart-key"]
    static let cohortKeys: Set<String> = ["ids", "group", "search"]

    /// Every setting ``parse(_:file:)`` accepts, as the reference names it: the top-level keys, and the
    /// keys of the `auth:`, `patients:` and `reports:` mappings as `section.key` (`auth.token-env`). Built
    /// from the sets the parser checks against, so that Docs/sync-job.md can be checked against it.
    public static var acceptedSettings: [String] {
        let sections: [(String, Set<String>)] = [("auth", authKeys), ("patients", cohortKeys), ("reports", reportKeys)]
        return keys.sorted() + sections.flatMap { section, nested in nested.sorted().map { "\(section).\($0)" } }
    }

    /// Whether `a` becomes `b` by one inserted, removed, changed or swapped letter (a typo's distance).
    static func oneEditApart(_ a: String, _ b: String) -> Bool {
        let a = Array(a), b = Array(b)
        guard abs(a.count - b.count) <= 1, a != b else { return false }
        var i = 0
        while i < min(a.count, b.count), a[i] == b[i] { i += 1 }
        if a.count == b.count {
            return a[(i + 1)...] == b[(i + 1)...]
                || (i + 1 < a.count && a[i] == b[i + 1] && a[i + 1] == b[i] && a[(i + 2)...] == b[(i + 2)...])
        }
        return a.count > b.count ? a[(i + 1)...] == b[i...] : a[i...] == b[(i + 1)...]
    }

    /// Reads `text` (the contents of `file`); every problem is a ``SyncConfigurationError`` with its
    /// file:line:column.
    public static func parse(_ text: String, file: String) throws -> SyncConfiguration {
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch {
            throw SyncConfigurationError(location: file, message: "not YAML: \(error)")
        }
        guard let mapping = root?.mapping else { throw SyncConfigurationError(location: file, message: "expected a mapping of settings") }
        func place(_ node: Node) -> String {
            node.mark.map { "\(file):\($0.line):\($0.column)" } ?? file
        }
        func checked(_ mapping: Node.Mapping, _ allowed: Set<String>) throws -> [String: Node] {
            var found: [String: Node] = [:]
            for (key, value) in mapping {
                guard let name = key.string, allowed.contains(name) else {
                    let near = allowed.min { distance($0, key.string ?? "") < distance($1, key.string ?? "") }
                    throw SyncConfigurationError(location: place(key), message: "unknown setting '\(key.string ?? "")'" + (near.map { " (did you mean '\($0)'?)" } ?? ""))
                }
                found[name] = value
            }
            return found
        }
        let settings = try checked(mapping, keys)
        guard let serverNode = settings["server"], let serverText = serverNode.string else {
            throw SyncConfigurationError(location: file, message: "missing `server:` (the FHIR base URL)")
        }
        // Paths are the configuration file's: relative ones are read from its folder.
        let home = URL(fileURLWithPath: file).deletingLastPathComponent()
        func path(_ text: String) -> String {
            text.hasPrefix("/") ? text : home.appendingPathComponent(text).standardizedFileURL.path
        }
        var configuration: SyncConfiguration
        var isFolder: ObjCBool = false
        if let url = URL(string: serverText), ["http", "https"].contains(url.scheme ?? ""), url.host != nil {
            configuration = SyncConfiguration(server: url)
        } else if FileManager.default.fileExists(atPath: path(serverText), isDirectory: &isFolder), isFolder.boolValue {
            configuration = SyncConfiguration(server: URL(fileURLWithPath: path(serverText), isDirectory: true))
        } else {
            throw SyncConfigurationError(location: place(serverNode), message: "`server:` must be an http(s) URL or a folder, not '\(serverText)'")
        }
        if let node = settings["push-to"] {
            // The folder is made (0700) when missing; its parent must exist (a typo should not build a tree).
            guard let text = node.string else { throw SyncConfigurationError(location: place(node), message: "`push-to:` is a folder") }
            let folder = path(text)
            let parent = URL(fileURLWithPath: folder).deletingLastPathComponent().path
            if !FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder) {
                guard FileManager.default.fileExists(atPath: parent, isDirectory: &isFolder), isFolder.boolValue,
                      (try? PrivateFiles.makeFolder(folder)) != nil
                else {
                    throw SyncConfigurationError(location: place(node), message: "`push-to:` \(folder) cannot be made (does \(parent) exist?)")
                }
            } else if !isFolder.boolValue {
                throw SyncConfigurationError(location: place(node), message: "`push-to:` \(folder) is a file, not a folder")
            }
            configuration.pushFolder = folder
        }
        if let node = settings["store"] {
            guard let text = node.string, !text.isEmpty else { throw SyncConfigurationError(location: place(node), message: "`store:` is a SQLite file or a postgres:// URL") }
            do {
                switch try StoreLocation.parse(text) {
                case .sqlite(let file): configuration.store = .sqlite(path: path(file))
                case let located: configuration.store = located
                }
            } catch let error as StoreLocationError {
                throw SyncConfigurationError(location: place(node), message: "`store:` \(error.errorMessage)")
            }
        }
        if let node = settings["questionnaires"] {
            guard let text = node.string, FileManager.default.fileExists(atPath: path(text), isDirectory: &isFolder), isFolder.boolValue else {
                throw SyncConfigurationError(location: place(node), message: "`questionnaires:` is a folder that exists (of FHIR files holding Questionnaires)")
            }
            configuration.questionnaireFolder = path(text)
        }
        if let node = settings["consent-terms"] {
            guard let text = node.string else { throw SyncConfigurationError(location: place(node), message: "`consent-terms:` is a terms file (YAML)") }
            do {
                configuration.consentTerms = try ConsentTermsFile.load(path: path(text))
            } catch let error as ConsentTermsError {
                throw SyncConfigurationError(location: error.location, message: error.message)
            }
        }
        if configuration.serverIsFolder, configuration.pushFolder == nil {
            throw SyncConfigurationError(location: place(serverNode), message: "a folder as the server needs `push-to:` (the folder the outbox is written to)")
        }
        if let auth = settings["auth"] {
            guard let authMapping = auth.mapping else { throw SyncConfigurationError(location: place(auth), message: "`auth:` is a mapping") }
            let fields = try checked(authMapping, authKeys)
            configuration.auth = AuthorizationSettings(
                tokenEnv: fields["token-env"]?.string, tokenFile: fields["token-file"]?.string.map(path),
                smartClientID: fields["smart-client-id"]?.string, smartKey: fields["smart-key"]?.string.map(path))
            if configuration.auth.isEmpty || configuration.auth.conflict != nil {
                throw SyncConfigurationError(location: place(auth), message: "`auth:` takes one of token-env, token-file, or smart-client-id with smart-key")
            }
        }
        if let node = settings["resources"] {
            guard let items = node.sequence?.compactMap(\.string), !items.isEmpty else {
                throw SyncConfigurationError(location: place(node), message: "`resources:` is a list of resource types")
            }
            // A misspelled type would otherwise be found only as the server's 404, run after run.
            if let wrong = items.first(where: { !FHIRMetadata.r4.isResourceType($0) }) {
                let near = FHIRMetadata.r4.resourceTypes.first { $0.lowercased() == wrong.lowercased() || Self.oneEditApart($0, wrong) }
                throw SyncConfigurationError(
                    location: place(node), message: "`resources:` names '\(wrong)', which is not an R4 resource type" + (near.map { " (did you mean '\($0)'?)" } ?? ""))
            }
            configuration.resources = items
        }
        for (key, keyPath, least) in [
            ("page-size", \SyncConfiguration.pageSize, 1), ("batch-size", \SyncConfiguration.batchSize, 1), ("max-retries", \SyncConfiguration.maxRetries, 0),
            ("request-timeout", \SyncConfiguration.requestTimeout, 1), ("max-response-mb", \SyncConfiguration.maxResponseMiB, 1),
            ("run-timeout", \SyncConfiguration.runTimeout, 1),
        ] {
            guard let node = settings[key] else { continue }
            guard let value = node.int, value >= least, value <= 10_000 else {
                throw SyncConfigurationError(location: place(node), message: "`\(key):` is a number from \(least) to 10000")
            }
            configuration[keyPath: keyPath] = value
        }
        if let node = settings["patients"] {
            guard let cohortMapping = node.mapping else {
                throw SyncConfigurationError(location: place(node), message: "`patients:` is a mapping with one of ids, group or search")
            }
            let fields = try checked(cohortMapping, cohortKeys)
            guard fields.count == 1, let (key, value) = fields.first else {
                throw SyncConfigurationError(location: place(node), message: "`patients:` takes exactly one of ids, group or search")
            }
            switch key {
            case "ids":
                guard let ids = value.sequence?.compactMap(\.string), !ids.isEmpty,
                      ids.allSatisfy({ !$0.isEmpty && !$0.contains("/") && !$0.contains(",") })
                else {
                    throw SyncConfigurationError(location: place(value), message: "`ids:` is a list of Patient ids (without 'Patient/')")
                }
                configuration.cohort = .ids(ids)
            case "group":
                let id = value.string.map { $0.hasPrefix("Group/") ? String($0.dropFirst(6)) : $0 } ?? ""
                guard !id.isEmpty, !id.contains("/") else {
                    throw SyncConfigurationError(location: place(value), message: "`group:` is a Group id (Group/<id>)")
                }
                configuration.cohort = .group(id)
            default:
                let query = value.string.map { $0.hasPrefix("Patient?") ? String($0.dropFirst(8)) : $0 } ?? ""
                guard !query.isEmpty, query.split(separator: "&").allSatisfy({ $0.contains("=") }) else {
                    throw SyncConfigurationError(location: place(value), message: "`search:` is Patient search parameters (name=value&...)")
                }
                configuration.cohort = .search(query)
            }
        }
        if let node = settings["audit-events"] {
            guard let enabled = node.bool else { throw SyncConfigurationError(location: place(node), message: "`audit-events:` is true or false") }
            if enabled, configuration.serverIsFolder {
                throw SyncConfigurationError(location: place(node), message: "`audit-events:` needs a server, not a folder")
            }
            configuration.auditEvents = enabled
        }
        if let node = settings["coverage"] {
            guard let enabled = node.bool else { throw SyncConfigurationError(location: place(node), message: "`coverage:` is true or false") }
            configuration.coverage = enabled
        }
        if let node = settings["bulk"] {
            guard let bulk = node.bool else { throw SyncConfigurationError(location: place(node), message: "`bulk:` is true or false") }
            configuration.bulk = bulk
            switch configuration.cohort {
            case .ids?, .search?:
                throw SyncConfigurationError(
                    location: place(node), message: "a Bulk Data export takes every patient or a Group's: name the cohort with `group:`")
            case .group?, nil:
                break
            }
            if bulk, configuration.serverIsFolder {
                throw SyncConfigurationError(location: place(node), message: "`bulk:` needs a server, not a folder")
            }
        }
        if let node = settings["interval"] {
            guard let seconds = node.string.flatMap(Self.seconds), seconds >= 1 else {
                throw SyncConfigurationError(location: place(node), message: "`interval:` is a duration such as 30s, 5m or 1h")
            }
            configuration.interval = seconds
        }
        if let node = settings["time-zone"] {
            guard let name = node.string, TimeZone(identifier: name) != nil else {
                throw SyncConfigurationError(location: place(node), message: "unknown time zone '\(node.string ?? "")'")
            }
            configuration.timeZone = name
        }
        if let node = settings["reports"] {
            guard let reportsMapping = node.mapping else {
                throw SyncConfigurationError(location: place(node), message: "`reports:` is a mapping with `every:` and optionally `patients:`, `since:`, `rules:`")
            }
            if configuration.serverIsFolder {
                throw SyncConfigurationError(location: place(node), message: "`reports:` are pushed to a FHIR server, not written to a folder")
            }
            let fields = try checked(reportsMapping, reportKeys)
            guard let every = fields["every"] else {
                throw SyncConfigurationError(location: place(node), message: "`reports:` needs `every:` (weekly, monthly, or a number of days)")
            }
            guard let frequency = every.string.flatMap(ReportFrequency.init) else {
                throw SyncConfigurationError(
                    location: place(every), message: "`every:` is weekly, monthly, or a number of days from 1 to \(ReportFrequency.maximumDays), not '\(every.string ?? "")'")
            }
            var reports = Reports(patients: nil, frequency: frequency)
            if let patients = fields["patients"] {
                if patients.string == "all" {
                    reports.patients = nil
                } else if let ids = patients.sequence?.compactMap(\.string), !ids.isEmpty, ids.count == patients.sequence?.count,
                    ids.allSatisfy({ !$0.isEmpty && $0.count <= 200 })
                {
                    reports.patients = ids
                } else {
                    throw SyncConfigurationError(location: place(patients), message: "`patients:` is `all` or a list of patient ids")
                }
            }
            if let since = fields["since"] {
                guard let text = since.string, Self.isDay(text) else {
                    throw SyncConfigurationError(location: place(since), message: "`since:` is a day, YYYY-MM-DD")
                }
                reports.since = text
            }
            if let rules = fields["rules"] {
                guard let text = rules.string, !text.isEmpty else {
                    throw SyncConfigurationError(location: place(rules), message: "`rules:` is the path of a rules file (insights.yaml format)")
                }
                reports.rulesFile = path(text)
            }
            configuration.reports = reports
        }
        return configuration
    }

    /// Whether `text` is a real day written `YYYY-MM-DD` (not 2026-02-30).
    static func isDay(_ text: String) -> Bool {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard text.utf8.count == 10, parts.count == 3, parts.map(\.count) == [4, 2, 2],
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2])
        else { return false }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? .current
        guard let date = calendar.date(from: DateComponents(year: year, month: month, day: day)) else { return false }
        let back = calendar.dateComponents([.year, .month, .day], from: date)
        return back.year == year && back.month == month && back.day == day
    }

    /// `90`, `90s`, `5m`, `1h` as seconds.
    static func seconds(_ text: String) -> TimeInterval? {
        let text = text.trimmingCharacters(in: .whitespaces)
        let units: [Character: TimeInterval] = ["s": 1, "m": 60, "h": 3600]
        if let last = text.last, let unit = units[last] { return Double(text.dropLast()).map { $0 * unit } }
        return Double(text)
    }

    private static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        var row = Array(0...b.count)
        for i in 1...max(a.count, 1) where !a.isEmpty {
            var previous = row[0]
            row[0] = i
            for j in 1...max(b.count, 1) where !b.isEmpty {
                let saved = row[j]
                row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
                previous = saved
            }
        }
        return row[b.count]
    }
}

/// A sync configuration that cannot be used, with where.
public struct SyncConfigurationError: Error, CustomStringConvertible, Equatable {
    public let location: String
    public let message: String
    public var description: String { "\(location): \(message)" }
}
