import Foundation

/// The last export committed to one file target: the export whose outbox entries were marked sent, and
/// the file it writes.
///
/// An export to a file writes a hidden partial file first, then records its progress in the same batch
/// that marks its entries sent, then renames the file into place. A run killed between the last two steps
/// leaves a partial file whose export is recorded here: the next run renames it into place instead of
/// sending its outcomes again.
public struct ExportProgress: Equatable, Sendable {
    /// The target the export was asked to write: a file, or the folder that gets a new file per run.
    public var target: String
    /// The id of the export (the one its partial file's name carries).
    public var exportID: String
    /// The path of the file the export writes, once renamed into place.
    public var file: String
    /// When the export was committed.
    public var committedDate: Date

    public init(target: String, exportID: String, file: String, committedDate: Date = Date()) {
        self.target = target
        self.exportID = exportID
        self.file = file
        self.committedDate = committedDate
    }
}
