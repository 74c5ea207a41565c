import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Says that `caregate serve` serves a store, so that a job on the same store can make way for it
/// (`caregate sync` then runs as a background job: its CPU goes to patients' apps first).
///
/// The server holds a shared lock (``StoreLock/serving``, in the store's lock file) while it runs
/// (several servers may); a job asks whether anyone holds it without taking it. The kernel drops the lock with the server, however
/// it ends, so a crashed server never makes later jobs think it still serves.
///
/// ```swift
/// let marker = try ServingMarker(storePath: "caregate.sqlite")   // in the server, kept while it serves
/// ServingMarker.isServed(storePath: "caregate.sqlite")            // in a job: true
/// ```
public final class ServingMarker: Sendable {
    private let descriptor: Int32

    /// Marks the store at `storePath` as served until this marker is released.
    /// - Throws: ``StoreError/cannotWrite(path:reason:)`` when the marker file cannot be made beside the store.
    public init(storePath: String) throws {
        let path = StoreLock.serving.path(storePath: storePath)
        guard let descriptor = FileLock.shared(.serving, storePath: storePath) else {
            throw StoreError.cannotWrite(path: storePath, reason: "cannot open and lock \(path): \(String(cString: strerror(errno)))")
        }
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }

    /// Whether a server (in any process) serves the store at `storePath` now.
    public static func isServed(storePath: String) -> Bool {
        storePath != ":memory:" && FileLock.isHeld(.serving, storePath: storePath)
    }
}
