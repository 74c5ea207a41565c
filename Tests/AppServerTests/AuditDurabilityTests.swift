import AppClient
import CareModel
import Foundation
import Store
import StoreTestSupport
import TestSupport
import XCTest

/// Issue 41, item 9: a push's audit entry is durable with the push. The entry is written (as
/// `unanswered`, status 0) before the push's transaction and completed with its answer, so a server killed
/// between the push's commit and its answer's audit commit leaves the push with its entry.
final class AuditDurabilityTests: XCTestCase {
    /// Rounds of pushes from two patients' devices, each round ended by SIGKILL at a random moment; then
    /// every stored push has an entry: per patient, the outcomes stored are at most the push entries
    /// answered 200 or left unanswered, and every push answered 200 is stored.
    func testEveryStoredPushHasItsAuditEntryAfterSIGKILL() async throws {
        try await forEachStore(sqliteFile: true) { tested in
            let folder = try makeScratchFolder("audit-durability")
            let store = try XCTUnwrap(tested.location)
            let key = folder.appendingPathComponent("server.key").path
            let fixture = try AppServerFixture(tested)
            let tasks = fixture.tasks
            var tokens: [String: String] = [:]
            for patient in ["Patient/pat-1", "Patient/pat-2"] {
                let issued = try CLIRunner.run(["patients", "token", "--store", store, "--key", key, "--patient", patient, "--expires-in", "1h"])
                XCTAssertEqual(issued.status, 0, issued.stderr)
                tokens[patient] = issued.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            let counter = PushCounter()
            let rounds = 12
            for round in 0..<rounds {
                let server = try AppServerProcess.start(store: store, key: key)
                let base = server.base
                var devices: [PushingDevice] = []
                for (patient, token) in tokens { devices.append(PushingDevice(token: token, task: try XCTUnwrap(tasks[patient]), patient: patient)) }
                let pushing = devices
                let workers = Task.detached { [pushing, counter, base] in await AuditDurabilityTests.pushUntilKilled(base: base, devices: pushing, counter: counter) }
                // 150 to 900 ms of pushes, then SIGKILL: sometimes between a push's commit and its answer.
                usleep(UInt32(150_000 + (round * 97_000) % 750_000))
                server.kill()
                workers.cancel()
                await workers.value
            }
            let reader = try tested.reopen()
            let stored = try reader.outcomes(.current)
            XCTAssertGreaterThan(stored.count, 0, "no push was stored")
            var unansweredTotal = 0
            for (patient, task) in tasks {
                let outcomes = stored.filter { $0.taskUUID == task.uuid }.count
                let entries = try reader.auditEntries(patientID: patient, limit: 1_000_000).filter { $0.action == "POST /carekit/v1/revisions" }
                let answered = entries.filter { $0.status == 200 }.count
                let unanswered = entries.filter(\.isUnanswered).count
                unansweredTotal += unanswered
                XCTAssertLessThanOrEqual(outcomes, answered + unanswered, "\(tested.kind) \(patient): a stored push without its audit entry")
                XCTAssertLessThanOrEqual(answered, outcomes, "\(tested.kind) \(patient): a push answered 200 that is not stored")
                print("audit durability on \(tested.kind): \(patient): \(outcomes) pushes stored, \(answered) entries answered 200, \(unanswered) left unanswered by a kill")
            }
            XCTAssertEqual(try reader.auditStatistics().unanswered, unansweredTotal)
        }
    }
}

extension AuditDurabilityTests {
    /// Each device pulls, then pushes a new outcome, again and again, until its server is gone.
    static func pushUntilKilled(base: URL, devices: [PushingDevice], counter: PushCounter) async {
        await withTaskGroup(of: Void.self) { group in
            for pushing in devices {
                group.addTask {
                    let (token, task, patient) = (pushing.token, pushing.task, pushing.patient)
                    let client = AppClient(base: base, token: token)
                    let device = UUID()
                    while !Task.isCancelled {
                        let occurrence = counter.next(patient)
                        do {
                            var knowledge = KnowledgeVector()
                            for record in try await client.pull(knowledge: knowledge) { knowledge.merge(with: record.knowledgeVector) }
                            knowledge.processes[device] = occurrence + 1
                            let outcome = Outcome(
                                taskUUID: task.uuid, taskOccurrenceIndex: occurrence, values: [OutcomeValue(.double(Double(occurrence)))],
                                metadata: EntityMetadata(effectiveDate: AppServerFixture.day0, timezone: .gmt))
                            try await client.push(
                                revisions: [CareKitRevisionRecord(entities: [CareKitEntity(.outcome(outcome))], knowledgeVector: knowledge)],
                                knowledge: knowledge)
                        } catch {
                            // The server was killed: this round is over for this device.
                            return
                        }
                    }
                }
            }
        }
    }
}

/// One patient's device in ``AuditDurabilityTests``: its token and task.
struct PushingDevice: Sendable {
    let token: String
    let task: CareTask
    let patient: String
}

/// The next occurrence each patient's device records (one new outcome per push).
final class PushCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var next: [String: Int] = [:]

    func next(_ patient: String) -> Int {
        lock.withLock {
            let value = next[patient, default: 0]
            next[patient] = value + 1
            return value
        }
    }
}
