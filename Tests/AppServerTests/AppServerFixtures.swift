@testable import AppServer
import CareModel
@preconcurrency import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import Store
import StoreTestSupport
import TestSupport
import XCTest

/// A store made by `caregate store generate` (2 patients, 2 tasks, 2 days), a scratch folder, and a token
/// of patient-1 issued by `caregate patients token` with a new key beside it: what a test of a real
/// `caregate serve` starts from.
struct GeneratedStore {
    let folder: URL
    let store: String
    let key: String
    let token: String
}

extension XCTestCase {
    func generatedStore(_ label: String, tokenExpiresIn: String = "10m", file: StaticString = #filePath, line: UInt = #line) throws -> GeneratedStore {
        let folder = try makeScratchFolder(label)
        return try generatedStore(in: folder, store: folder.appendingPathComponent("store.sqlite").path, tokenExpiresIn: tokenExpiresIn, file: file, line: line)
    }

    /// ``generatedStore(_:tokenExpiresIn:file:line:)`` in the store under test (``forEachStore(sqliteFile:)``:
    /// a SQLite file, or a PostgreSQL database).
    func generatedStore(
        _ label: String, on tested: TestStore, tokenExpiresIn: String = "10m", file: StaticString = #filePath, line: UInt = #line
    ) throws -> GeneratedStore {
        let store = try XCTUnwrap(tested.location, "a store generate needs a SQLite file or a database", file: file, line: line)
        return try generatedStore(in: try makeScratchFolder(label), store: store, tokenExpiresIn: tokenExpiresIn, file: file, line: line)
    }

    private func generatedStore(in folder: URL, store: String, tokenExpiresIn: String, file: StaticString, line: UInt) throws -> GeneratedStore {
        let key = folder.appendingPathComponent("server.key").path
        let generated = try CLIRunner.run(["store", "generate", "--store", store, "--patients", "2", "--tasks", "2", "--days", "2"])
        XCTAssertEqual(generated.status, 0, generated.stderr, file: file, line: line)
        let issued = try CLIRunner.run(["patients", "token", "--store", store, "--key", key, "--patient", "patient-1", "--expires-in", tokenExpiresIn])
        XCTAssertEqual(issued.status, 0, issued.stderr, file: file, line: line)
        return GeneratedStore(folder: folder, store: store, key: key, token: issued.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

/// Two patients, each with a care plan, a daily task and a contact, in the store under test (SQLite in
/// memory or in a file, or a PostgreSQL database: ``forEachStore``), and the server's key.
struct AppServerFixture: Sendable {
    static let utc = TimeZone(identifier: "UTC")!
    /// 2025-03-01 00:00 UTC.
    static let day0 = Date(timeIntervalSince1970: 1_740_787_200)

    let store: AnyTestStore
    let key: ServerKey
    let server: AppServer
    var tasks: [String: CareTask] = [:]

    /// The SQLite store, for the tests of what only SQLite has (nil on PostgreSQL).
    var sqlite: SQLiteStore? { store as? SQLiteStore }

    /// On the store under test (``forEachStore``); accepting `issuer`'s tokens too when it is given. The
    /// server wraps a PostgreSQL store in ``PooledAppStore`` as `caregate serve` does (``AppServer``).
    init(_ tested: TestStore, issuer: TestIssuer? = nil) throws {
        try self.init(store: tested.store, issuer: issuer)
    }

    /// On SQLite, in memory or in the file `path`: for the tests of what only SQLite has.
    init(path: String? = nil, issuer: TestIssuer? = nil) throws {
        try self.init(store: try path.map { try SQLiteStore(path: $0) } ?? SQLiteStore.inMemory(), issuer: issuer)
    }

    private init(store: AnyTestStore, issuer: TestIssuer?) throws {
        self.store = store
        key = ServerKey(privateKey: P256.Signing.PrivateKey())
        server = AppServer(store: store, key: key, issuer: try issuer.map { try $0.verifier(IssuerDocuments(serving: $0)) })
        var batch = StoreBatch()
        for name in ["pat-1", "pat-2"] {
            let patient = Patient(id: "Patient/\(name)", name: PersonName(givenName: "Given-\(name)", familyName: "Family-\(name)"),
                                  metadata: EntityMetadata(effectiveDate: Self.day0, timezone: Self.utc))
            let plan = CarePlan(id: "CarePlan/plan-\(name)", title: "Plan of \(name)", patientUUID: patient.uuid,
                                metadata: EntityMetadata(effectiveDate: Self.day0, timezone: Self.utc))
            let schedule = try Schedule.dailyAtTime(hour: 8, minutes: 0, start: Self.day0, end: nil, text: nil, duration: .minutes(30), timeZone: Self.utc)
            let task = CareTask(id: "Task/task-\(name)", title: "Task of \(name)", schedule: schedule, carePlanUUID: plan.uuid,
                                metadata: EntityMetadata(effectiveDate: Self.day0, timezone: Self.utc))
            let contact = Contact(id: "Contact/doc-\(name)", name: PersonName(givenName: "Doctor", familyName: "Of-\(name)"), carePlanUUID: plan.uuid,
                                  metadata: EntityMetadata(effectiveDate: Self.day0, timezone: Self.utc))
            batch.add(patient)
            batch.add(plan)
            batch.add(task)
            batch.add(contact)
            tasks[patient.id] = task
        }
        try store.apply(batch)
    }

    func token(_ patientID: String = "Patient/pat-1", lifetime: TimeInterval = 3600, audience: String = PatientToken.defaultAudience, now: Date = Date()) throws -> String {
        try PatientToken.issue(patientID: patientID, key: key, audience: audience, lifetime: lifetime, now: now)
    }

    func bearer(_ token: String) -> HTTPFields { [.authorization: "Bearer \(token)"] }

    /// Queues an outbox entry and fails it for good (a server's 422): what the operator page lists with
    /// a Requeue button. Returns its id.
    func addFailedOutboxEntry() throws -> Int64 {
        var enqueue = StoreBatch()
        enqueue.enqueue(OutboxEntry(destination: "https://ehr.example/fhir", entityKind: .outcome, entityID: "x_1", entityUUID: UUID(), payload: Data("{}".utf8)))
        let id = try XCTUnwrap(store.apply(enqueue).outboxEntryIDs.first)
        var fail = StoreBatch()
        fail.transition(outboxEntry: id, .sent(at: Date()))
        fail.transition(outboxEntry: id, .failed(error: "HTTP 422", retryAt: nil, at: Date()))
        try store.apply(fail)
        return id
    }

    /// Runs `body` against the server's routes in memory.
    func test(_ body: @Sendable @escaping (any TestClientProtocol) async throws -> Void) async throws {
        try await Application(router: server.router()).test(.router, body)
    }
}

extension TestResponse {
    var text: String { String(buffer: body) }

    var json: Any? { try? JSONSerialization.jsonObject(with: Data(text.utf8)) }
}

/// Tokens that must each be refused, by name.
enum BadTokens {
    static func all(_ fixture: AppServerFixture) throws -> [(String, String?)] {
        let other = ServerKey(privateKey: P256.Signing.PrivateKey())
        let good = try fixture.token()
        let parts = good.split(separator: ".").map(String.init)
        let noneHeader = Base64URLText.encode(Data(#"{"alg":"none","typ":"JWT"}"#.utf8))
        let hsHeader = Base64URLText.encode(Data(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        return [
            ("no token", nil),
            ("expired", try fixture.token(lifetime: 60, now: Date().addingTimeInterval(-7200))),
            ("forged", try PatientToken.issue(patientID: "Patient/pat-1", key: other, lifetime: 3600)),
            ("alg none", noneHeader + "." + parts[1] + "."),
            ("alg none with signature", noneHeader + "." + parts[1] + "." + parts[2]),
            ("HS256", hsHeader + "." + parts[1] + "." + parts[2]),
            ("other audience", try fixture.token(audience: "another-api")),
            ("tampered claims", parts[0] + "." + Base64URLText.encode(Data(#"{"patient":"Patient/pat-2","sub":"Patient/pat-2","aud":"caregate-app-api","iss":"caregate","exp":9999999999}"#.utf8)) + "." + parts[2]),
            ("garbage", "not-a-token"),
            ("too long", String(repeating: "a", count: 10_000)),
        ]
    }
}

/// The tests' name for the app server's one base64url (the tests forge tokens by hand: bad ones that
/// jwt-kit would not sign).
enum Base64URLText {
    static func encode(_ data: Data) -> String { Base64URL.encode(data) }
}
