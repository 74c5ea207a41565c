import Foundation
import Pipeline
import Testing
import TestSupport

/// An export to a folder killed with SIGKILL right after each step of its commit, then run again with
/// `caregate export`: every outcome is pending or sent, none is lost, none is written twice.
///
/// The export runs in a child process (an exit test) through the library, as `caregate export` runs it;
/// the child sends itself SIGKILL from ``Exporter/onPhase`` when the step is done, so it dies exactly
/// there, with no unwinding and no clean-up, as a crash or `kill -9` leaves it.
@Suite struct ExportKillTests {
    /// Killed after writing the partial file, before the commit: nothing is sent; the next run deletes
    /// the partial file and sends everything, once.
    @Test func killedBeforeTheCommitSendsEverythingNextTime() async throws {
        try await assertKill(afterPhase: "written", sentAfterKill: 0, recovery: "deleted the file of a killed run")
    }

    /// Killed after the commit, before the rename: everything is sent; the next run puts the file in
    /// place and sends nothing again.
    @Test func killedAfterTheCommitFinishesTheFileNextTime() async throws {
        try await assertKill(afterPhase: "committed", sentAfterKill: 4, recovery: "renamed into place the file of a killed run")
    }

    private func assertKill(afterPhase phase: String, sentAfterKill: Int, recovery: String) async throws {
        let scenario = try ExportScenario(outcomes: 4)
        defer { scenario.remove() }
        let store = scenario.store
        let out = scenario.out.path
        await #expect(processExitsWith: .signal(SIGKILL), "the export dies at the phase, not before or after") { [store = store as String, out = out as String, phase] in
            let exporter = try Gateway(path: store, creating: false).exporter()
            exporter.onPhase = { done in
                switch done {
                case .written where phase == "written", .committed where phase == "committed": kill(getpid(), SIGKILL)
                default: break
                }
            }
            _ = try exporter.run(to: .folder(out))
        }
        #expect(try scenario.exported() == [], "no file in place yet")
        #expect(try scenario.partialFiles().count == 1, "the killed run's partial file is left")
        #expect(try scenario.outbox(state: "sent") == sentAfterKill)
        #expect(try scenario.outbox(state: "pending") == 4 - sentAfterKill)

        let next = try ExportScenario.succeed(["export", "--store", store, "--to", out, "--verbose"])
        #expect(next.stderr.contains(recovery), "\(next.stderr)")
        #expect(try scenario.outbox(state: "sent") == 4)
        #expect(try scenario.exported().count == 1, "one file")
        #expect(try scenario.observationCount() == 4, "each outcome written once")
        #expect(try scenario.partialFiles() == [])
    }
}
