import Foundation
import Hummingbird
import Insights
import Mapping
import Store

/// `GET /health/live`, `GET /health/ready` and `GET /health`: whether the server answers, and whether it
/// can do its work, for a load balancer, an orchestrator's probes or the person on call. Open to all.
///
/// - live: the process answers (always 200 while it does).
/// - ready: the store answers a read, its file can take writes (``StoreFileWatch``: present, the one the
///   server opened, writable; nothing is written), the mappings the server reads by are loaded, and the
///   signing key signs and verifies. 200 when every check passes, 503 naming the failing ones.
/// - `/health`: ready's verdict in the shape it always had (`{"status":"ok"}`; 503 with
///   `{"status":"fail","failing":"store.writable"}`), for clients that read it as before.
///
/// Each answer is JSON with each check's result; no patient data and no file path is ever in one.
struct HealthRoutes: Sendable {
    let store: any AsyncAppStore
    /// What the server checked once, as it was made: the mappings and the key do not change while it runs.
    let startup: StartupChecks
    let storeFile: StoreFileWatch?

    /// The checks done once when the server is made.
    struct StartupChecks: Sendable {
        /// Why the mappings are not loaded; nil when they are.
        var mappings: String?
        /// Why the signing key does not work; nil when it does.
        var signingKey: String?

        init(key: ServerKey, readingKinds: ReadingKinds, insightsRules: InsightsRules) {
            mappings = readingKinds.kinds.isEmpty ? "no LOINC <-> HealthKit table is loaded"
                : insightsRules.measurements.isEmpty ? "no Insights measurements are loaded" : nil
            let probe = Data("caregate readiness".utf8)
            let signed = (try? key.privateKey.signature(for: probe)).map { key.publicKey.isValidSignature($0, for: probe) } ?? false
            signingKey = signed ? nil : "the signing key cannot sign and verify"
        }
    }

    /// One check's result.
    struct Check: Encodable {
        let status: String
        let reason: String?

        init(problem: String?) {
            status = problem == nil ? "ok" : "fail"
            reason = problem
        }
    }

    /// `storeFilePath`: the store's file (``AppSyncStore/storeFilePath``), watched for the writable check.
    init(store: any AsyncAppStore, storeFilePath: String?, startup: StartupChecks) {
        self.store = store
        self.startup = startup
        storeFile = storeFilePath.map(StoreFileWatch.init(path:))
    }

    func register(on router: Router<AppRequestContext>) {
        router.get("health/live") { _, _ in
            try Self.answer(["process": Check(problem: nil)])
        }
        router.get("health/ready") { _, _ in
            try Self.answer(await readiness())
        }
        router.get("health") { _, _ in
            let failing = await readiness().filter { $0.value.status != "ok" }.keys.sorted()
            guard !failing.isEmpty else { return JSONResponse.make(Data(#"{"status":"ok"}"#.utf8)) }
            let body = try Self.encoder.encode(["status": "fail", "failing": failing.joined(separator: ",")])
            return JSONResponse.make(body, status: .serviceUnavailable)
        }
    }

    /// Every readiness check, by name.
    func readiness() async -> [String: Check] {
        let readable = (try? await store.serverClock()) != nil
        return [
            "store.readable": Check(problem: readable ? nil : "the store cannot be read"),
            "store.writable": Check(problem: storeFile?.problem()),
            "mappings": Check(problem: startup.mappings),
            "signing-key": Check(problem: startup.signingKey),
        ]
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    private struct Answer: Encodable {
        let status: String
        let checks: [String: Check]
    }

    /// 200 with `{"status":"ok","checks":{...}}` when every check passes, else 503 with status `fail`.
    private static func answer(_ checks: [String: Check]) throws -> Response {
        let passes = checks.values.allSatisfy { $0.status == "ok" }
        let body = try encoder.encode(Answer(status: passes ? "ok" : "fail", checks: checks))
        return JSONResponse.make(body, status: passes ? .ok : .serviceUnavailable)
    }
}
