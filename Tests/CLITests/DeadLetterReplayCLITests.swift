import Foundation
import Store
import TestSupport
import XCTest

/// `caregate store dead-letters show|retry` and `caregate outbox retry --state failed --all`, as an
/// operator runs them after fixing what made a resource fail.
final class DeadLetterReplayCLITests: XCTestCase {
    private var folder: URL!
    private var storePath: String { folder.appendingPathComponent("care.sqlite").path }
    private var mappings: URL { folder.appendingPathComponent("mappings") }

    /// A Patient mapping whose greeting adds text to every given name: FHIRPath's `+` takes one item, so
    /// it fails for a patient with two given names (issue 48's "a mapping that failed").
    private static let brokenMapping = """
        resource: Patient
        entities:
          - entity: patient
            fields:
              name: { transform: humanName, from: name }
              birthday: birthDate
              userInfo.greeting: "name.given + '!'"
        """
    private static let fixedMapping = brokenMapping.replacingOccurrences(of: "name.given + '!'", with: "name.given.first() + '!'")

    /// Two patients: `good` has one given name, `bad` two.
    private static let input = """
        {"resourceType": "Bundle", "type": "collection", "entry": [
          {"resource": {"resourceType": "Patient", "id": "good", "name": [{"family": "Ok", "given": ["Al"]}], "birthDate": "1970-01-01"}},
          {"resource": {"resourceType": "Patient", "id": "bad", "name": [{"family": "Bad", "given": ["Bo", "Cy"]}], "birthDate": "1971-02-03"}}
        ]}
        """

    override func setUpWithError() throws {
        folder = try makeScratchFolder("dead-letter-replay")
        try FileManager.default.createDirectory(at: mappings, withIntermediateDirectories: true)
    }

    private func writeMapping(_ text: String) throws {
        try Data(text.utf8).write(to: mappings.appendingPathComponent("Patient.yaml"))
    }

    private func caregate(_ arguments: [String]) throws -> CLIRunner.Result {
        try CLIRunner.run(arguments + ["--store", storePath])
    }

    /// Imports the input with the broken mapping: `bad` fails and is dead letter #1.
    private func importWithTheBrokenMapping() throws -> String {
        try writeMapping(Self.brokenMapping)
        let input = try folder.writeFile("patients.json", Self.input)
        let imported = try caregate(["import", input, "--mappings", mappings.path, "--time-zone", "UTC"])
        XCTAssertEqual(imported.status, 1, imported.stdout + imported.stderr)
        XCTAssertTrue(imported.stdout.contains("Patient/bad"), imported.stdout)
        let listed = try caregate(["store", "dead-letters"])
        XCTAssertEqual(listed.status, 0, listed.stderr)
        XCTAssertTrue(listed.stdout.hasPrefix("#1 ") && listed.stdout.contains("Patient/bad: mapping"), listed.stdout)
        return input
    }

    func testADeadLetterReplayedAfterTheMappingIsFixedImportsAndLeavesTheListAndASecondReplayChangesNothing() throws {
        _ = try importWithTheBrokenMapping()

        let shown = try caregate(["store", "dead-letters", "show", "1"])
        XCTAssertEqual(shown.status, 0, shown.stderr)
        XCTAssertTrue(shown.stdout.contains("reason: mapping") && shown.stdout.contains("expected a single item, got 2"), shown.stdout)
        XCTAssertTrue(shown.stdout.contains("state: waiting"), shown.stdout)
        XCTAssertTrue(shown.stdout.contains(#""id":"bad""#), "the kept source resource is shown: \(shown.stdout)")
        let withoutResource = try caregate(["store", "dead-letters", "show", "1", "--no-resource"])
        XCTAssertFalse(withoutResource.stdout.contains(#""id":"bad""#), withoutResource.stdout)

        // Replayed before the fix: it fails again and stays, with the same reason.
        let early = try caregate(["store", "dead-letters", "retry", "1", "--mappings", mappings.path, "--time-zone", "UTC"])
        XCTAssertEqual(early.status, 1, early.stdout + early.stderr)
        XCTAssertTrue(early.stdout.contains("#1: failed again: mapping"), early.stdout)
        XCTAssertTrue(try caregate(["store", "dead-letters"]).stdout.contains("#1 "))
        XCTAssertFalse(try caregate(["store", "dump"]).stdout.contains("Patient/bad"), "nothing of it is stored half-way")

        // The mapping fixed: the replay imports it from the kept resource, and it leaves the list.
        try writeMapping(Self.fixedMapping)
        let replayed = try caregate(["store", "dead-letters", "retry", "1", "--mappings", mappings.path, "--time-zone", "UTC"])
        XCTAssertEqual(replayed.status, 0, replayed.stdout + replayed.stderr)
        XCTAssertEqual(replayed.stdout, "#1: imported: resolved\n")
        let dump = try caregate(["store", "dump"])
        XCTAssertTrue(dump.stdout.contains("patient Patient/bad ") && dump.stdout.contains(#"name="Bo Bad""#), dump.stdout)
        XCTAssertEqual(try caregate(["store", "dead-letters"]).stdout, "no dead letters waiting\n")
        let resolved = try caregate(["store", "dead-letters", "list", "--resolved"])
        XCTAssertTrue(resolved.stdout.contains("#1 ") && resolved.stdout.contains("[resolved ") && resolved.stdout.contains(": imported]"), resolved.stdout)
        XCTAssertTrue(try caregate(["store", "stats"]).stdout.contains("dead letters: 0 waiting, 1 resolved by a replay"))

        // The same replay twice changes nothing: no new version, no new letter, the letter as it was.
        let before = try storeSnapshot()
        let again = try caregate(["store", "dead-letters", "retry", "1", "--mappings", mappings.path, "--time-zone", "UTC"])
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertEqual(again.stdout, "#1: already resolved: nothing to do\n")
        let all = try caregate(["store", "dead-letters", "retry", "--all", "--mappings", mappings.path, "--time-zone", "UTC"])
        XCTAssertEqual(all.status, 0, all.stderr)
        XCTAssertEqual(all.stdout, "no dead letters to replay\n")
        XCTAssertEqual(try storeSnapshot(), before)
    }

    /// What a replay could change: every version, the statistics, every dead letter with its state.
    private func storeSnapshot() throws -> [String] {
        try [["store", "dump"], ["store", "stats"], ["store", "dead-letters", "list", "--resolved"]].map { try caregate($0).stdout }
    }

    func testALaterImportOfNewerContentSupersedesTheDeadLetterWithoutReplayingIt() throws {
        let input = try importWithTheBrokenMapping()
        try writeMapping(Self.fixedMapping)
        let reimported = try caregate(["import", input, "--mappings", mappings.path, "--time-zone", "UTC"])
        XCTAssertEqual(reimported.status, 0, reimported.stdout + reimported.stderr)
        let all = try caregate(["store", "dead-letters", "retry", "--all", "--since", "2000-01-01", "--time-zone", "UTC", "--mappings", mappings.path])
        XCTAssertEqual(all.status, 0, all.stdout + all.stderr)
        XCTAssertTrue(all.stdout.contains("#1: a later import kept newer content of its resource: resolved without replay"), all.stdout)
        XCTAssertEqual(try caregate(["store", "dead-letters"]).stdout, "no dead letters waiting\n")
    }

    func testRetryAllSinceADayLeavesOlderLettersAndBadUsageIsRefused() throws {
        _ = try importWithTheBrokenMapping()
        try writeMapping(Self.fixedMapping)
        let later = try caregate(["store", "dead-letters", "retry", "--all", "--since", "2999-01-01", "--time-zone", "UTC", "--mappings", mappings.path])
        XCTAssertEqual(later.status, 0, later.stderr)
        XCTAssertEqual(later.stdout, "no dead letters to replay\n")
        XCTAssertTrue(try caregate(["store", "dead-letters"]).stdout.contains("#1 "), "a letter kept before --since waits")

        for usage in [["retry"], ["retry", "1", "--all"], ["retry", "1", "--since", "2026-01-01"], ["retry", "--all", "--since", "yesterday"],
                      ["retry", "--all", "--limit", "0"], ["retry", "0"]] {
            let refused = try caregate(["store", "dead-letters"] + usage)
            XCTAssertEqual(refused.status, 2, "\(usage): \(refused.stdout) \(refused.stderr)")
        }
        let unknown = try caregate(["store", "dead-letters", "retry", "1", "99"])
        XCTAssertEqual(unknown.status, 1)
        XCTAssertTrue(unknown.stderr.contains("no dead letter #99"), unknown.stderr)
        XCTAssertTrue(try caregate(["store", "dead-letters"]).stdout.contains("#1 "), "an unknown id replays nothing")
        let missing = try caregate(["store", "dead-letters", "show", "99"])
        XCTAssertEqual(missing.status, 1)
        XCTAssertTrue(missing.stderr.contains("no dead letter #99"), missing.stderr)
    }

    func testTheSyncReportNamesTheDeadLettersWaitingUntilAReplayResolvesThem() throws {
        try writeMapping(Self.brokenMapping)
        let source = folder.appendingPathComponent("ehr")
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
        _ = try source.writeFile("patients.json", Self.input)
        let config = try folder.writeFile("sync.yaml", "server: \(source.path)\npush-to: \(folder.appendingPathComponent("out").path)\nresources: [Patient]\ntime-zone: UTC\n")
        let sync = try caregate(["sync", "--config", config, "--once", "--mappings", mappings.path])
        XCTAssertEqual(sync.status, 1, sync.stdout + sync.stderr)
        XCTAssertTrue(sync.stdout.contains("needs a person: 1 dead letter(s) waiting"), sync.stdout)

        try writeMapping(Self.fixedMapping)
        let replayed = try caregate(["store", "dead-letters", "retry", "--all", "--mappings", mappings.path, "--time-zone", "UTC"])
        XCTAssertEqual(replayed.stdout, "#1: imported: resolved\n", replayed.stderr)
        let again = try caregate(["sync", "--config", config, "--once", "--mappings", mappings.path])
        XCTAssertEqual(again.status, 0, again.stdout + again.stderr)
        XCTAssertFalse(again.stdout.contains("needs a person"), again.stdout)
    }

    func testOutboxRetryAllRequeuesEveryFailedEntryAndAnExportDeadLetterRequeuesItsEntry() throws {
        let store = try SQLiteStore(path: storePath, mode: .createIfMissing)
        var enqueue = StoreBatch()
        for index in 1...3 {
            enqueue.enqueue(OutboxEntry(destination: "https://ehr.example/fhir", entityKind: .outcome, entityID: "x_\(index)", entityUUID: UUID(), payload: Data("{}".utf8)))
        }
        let ids = try store.apply(enqueue).outboxEntryIDs
        let then = Date(timeIntervalSince1970: 1_700_000_000)
        var fail = StoreBatch()
        for id in ids.prefix(2) {
            fail.transition(outboxEntry: id, .sent(at: then))
            fail.transition(outboxEntry: id, .failed(error: "HTTP 422", retryAt: nil, at: then))
        }
        for id in ids.prefix(2) {
            fail.deadLetter(DeadLetter(system: OutboxEntry.provider, resourceType: "Observation", resourceID: "x-\(id)", outboxEntryID: id, reason: "rejected by server"))
        }
        try store.apply(fail)

        // An export's dead letter replayed: its entry is due again, and it leaves the list.
        let letter = try caregate(["store", "dead-letters", "retry", "1"])
        XCTAssertEqual(letter.status, 0, letter.stdout + letter.stderr)
        XCTAssertEqual(letter.stdout, "#1: outbox entry #\(ids[0]) requeued: resolved\n")
        XCTAssertEqual(try store.dueOutboxEntries(at: Date(), limit: 10).compactMap(\.id).sorted(), [ids[0], ids[2]])
        XCTAssertTrue(try caregate(["store", "dead-letters"]).stdout.hasPrefix("#2 "))

        for usage in [["outbox", "retry", "--all"], ["outbox", "retry", "--all", "--state", "pending"], ["outbox", "retry", "1", "--all", "--state", "failed"],
                      ["outbox", "retry", "1", "--state", "failed"]] {
            XCTAssertEqual(try caregate(usage).status, 2, "\(usage)")
        }
        // Every failed entry put back (the one requeued above is failed until it is sent), and the dead
        // letter still waiting for one resolved with it.
        let requeued = try caregate(["outbox", "retry", "--state", "failed", "--all"])
        XCTAssertEqual(requeued.status, 0, requeued.stderr)
        XCTAssertEqual(requeued.stdout, "2 failed outbox entries requeued\n")
        XCTAssertEqual(Set(try store.dueOutboxEntries(at: Date(), limit: 10).compactMap(\.id)), Set(ids), "both failed entries are due again, beside the pending one")
        XCTAssertEqual(try caregate(["store", "dead-letters"]).stdout, "no dead letters waiting\n")
        XCTAssertTrue(try caregate(["store", "dead-letters", "list", "--resolved"]).stdout.contains("[resolved "), "kept, resolved")
    }
}
