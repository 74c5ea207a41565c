import Foundation
import Yams

/// What `caregate sync --config FILE` reads (YAML):
///
/// ```yaml
/// server: http://127.0.0.1:8080/fhir      # the provider's FHIR base URL, or a folder of FHIR files
/// push-to: exports/                        # optional: write the outbox to this folder instead
/// auth:                                    # optional: one of
///   token-env: CAREGATE_TOKEN              #   a bearer token in this environment variable
///   token-file: /etc/caregate/token        #   a bearer token in this file
///   smart-client-id: caregate              #   SMART Backend Services, with
///   smart-key: /etc/caregate/key.pem       #   the client's private key (P-384 or RSA, PEM)
/// resources: [Patient, Practitioner, PractitionerRole, CarePlan, MedicationRequest, Goal, Observation]
/// page-size: 100                           # resources per search page
/// batch-size: 100                          # outcomes per pushed Bundle
/// time-zone: America/Chicago               # for times without an offset
/// ```
public struct SyncConfiguration: Sendable, Equatable {
    /// The FHIR base URL, or a file URL for a folder of FHIR files standing for the server (what a Bulk
    /// Data export leaves on disk: JSON, XML, NDJSON).
    public var server: URL
    /// A folder the outbox is written to (as by `caregate export --to DIR`) instead of the server;
    /// required when the server is a folder.
    public var pushFolder: String?
    public var auth = AuthorizationSettings()

    /// Whether the provider is a folder rather than a server.
    public var serverIsFolder: Bool { server.isFileURL }
    public var resources: [String] = SyncConfiguration.defaultResources
    public var pageSize = 100
    public var batchSize = 100
    public var timeZone: String?

    /// What the default mappings read, in an order where what is referred to comes first.
    public static let defaultResources = [
        "Patient", "Practitioner", "PractitionerRole", "RelatedPerson", "CareTeam", "Goal", "MedicationRequest", "CarePlan",
        "Observation",
    ]

    static let keys: Set<String> = ["server", "push-to", "auth", "resources", "page-size", "batch-size", "time-zone"]
    static let authKeys: Set<String> = ["token-env", "token-file", "smart-client-id", "smart-key"]

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
        var configuration: SyncConfiguration
        var isFolder: ObjCBool = false
        if let url = URL(string: serverText), ["http", "https"].contains(url.scheme ?? ""), url.host != nil {
            configuration = SyncConfiguration(server: url)
        } else if FileManager.default.fileExists(atPath: serverText, isDirectory: &isFolder), isFolder.boolValue {
            configuration = SyncConfiguration(server: URL(fileURLWithPath: serverText, isDirectory: true))
        } else {
            throw SyncConfigurationError(location: place(serverNode), message: "`server:` must be an http(s) URL or a folder, not '\(serverText)'")
        }
        if let node = settings["push-to"] {
            guard let path = node.string, FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), isFolder.boolValue else {
                throw SyncConfigurationError(location: place(node), message: "`push-to:` must be a folder that exists")
            }
            configuration.pushFolder = path
        }
        if configuration.serverIsFolder, configuration.pushFolder == nil {
            throw SyncConfigurationError(location: place(serverNode), message: "a folder as the server needs `push-to:` (the folder the outbox is written to)")
        }
        if let auth = settings["auth"] {
            guard let authMapping = auth.mapping else { throw SyncConfigurationError(location: place(auth), message: "`auth:` is a mapping") }
            let fields = try checked(authMapping, authKeys)
            configuration.auth = AuthorizationSettings(
                tokenEnv: fields["token-env"]?.string, tokenFile: fields["token-file"]?.string,
                smartClientID: fields["smart-client-id"]?.string, smartKey: fields["smart-key"]?.string)
            if configuration.auth.isEmpty || configuration.auth.conflict != nil {
                throw SyncConfigurationError(location: place(auth), message: "`auth:` takes one of token-env, token-file, or smart-client-id with smart-key")
            }
        }
        if let node = settings["resources"] {
            guard let items = node.sequence?.compactMap(\.string), !items.isEmpty else {
                throw SyncConfigurationError(location: place(node), message: "`resources:` is a list of resource types")
            }
            configuration.resources = items
        }
        for (key, keyPath) in [("page-size", \SyncConfiguration.pageSize), ("batch-size", \SyncConfiguration.batchSize)] {
            guard let node = settings[key] else { continue }
            guard let value = node.int, value > 0, value <= 10_000 else {
                throw SyncConfigurationError(location: place(node), message: "`\(key):` is a number from 1 to 10000")
            }
            configuration[keyPath: keyPath] = value
        }
        if let node = settings["time-zone"] {
            guard let name = node.string, TimeZone(identifier: name) != nil else {
                throw SyncConfigurationError(location: place(node), message: "unknown time zone '\(node.string ?? "")'")
            }
            configuration.timeZone = name
        }
        return configuration
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
