import Foundation
import Logging
import Store
import Sync

/// Keeps each run of `caregate sync` in the store's history (``SyncRunStore``), for `caregate store
/// sync-runs` and the operator page.
///
/// A run is recorded when it ends, with its report or the error it stopped on; a run killed before has
/// no record. A record that cannot be written is a warning in the log, never a failure of the run: the
/// run's exit status stays what its report says. A dry run writes nothing, so records nothing.
enum SyncRunRecording {
    /// Records `run` in `store`'s history, logging a warning when it cannot.
    static func record(_ run: SyncRun, in store: any Store, logger: Logger) {
        guard let history = store.syncRunHistory else { return }
        do {
            try history.recordSyncRun(run)
        } catch {
            logger.warning("the run was not recorded in the store's history of sync runs: \(error)")
        }
    }
}
