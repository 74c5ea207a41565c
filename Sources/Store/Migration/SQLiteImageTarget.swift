import Foundation

/// A new SQLite store a migration makes at `path`: built under a temporary name in the same folder
/// (with its `-audit.sqlite` trail) and renamed into place only when every section is written, so that
/// an interrupted migration leaves no store at `path`.
public struct SQLiteImageTarget: StoreImageTarget {
    public let path: String

    public init(path: String) {
        self.path = path
    }

    public var storeDescription: String { path }

    /// The files beside a store that would make `path` not new.
    static let occupyingSuffixes = ["", "-wal", "-audit.sqlite"]

    /// Refuses a path where a store (or any file) already is, or whose folder cannot take a new one.
    public func checkIsNew() throws {
        for suffix in Self.occupyingSuffixes where FileManager.default.fileExists(atPath: path + suffix) {
            throw StoreMigrationError.targetNotEmpty(store: path, holds: "a file at \(path + suffix)")
        }
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
            throw StoreError.cannotCreate(path: path, reason: "the folder \(folder) does not exist")
        }
        guard FileManager.default.isWritableFile(atPath: folder) else {
            throw StoreError.cannotCreate(path: path, reason: "the folder \(folder) is not writable (permission denied)")
        }
    }

    public func fill(_ copy: @escaping @Sendable (any StoreImageWriter) async throws -> Void) async throws {
        try checkIsNew()
        let url = URL(fileURLWithPath: path)
        let building = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).migrating-\(UUID().uuidString)").path
        defer { Self.remove(building) }
        let writer = SQLiteImageWriter(store: try SQLiteStore(path: building, mode: .createIfMissing))
        try await copy(writer)
        try writer.finish()
        // Checked again: another process may have made a store there meanwhile.
        try checkIsNew()
        let trail = AuditTrailFile.path(ofStore: building)
        if FileManager.default.fileExists(atPath: trail) {
            try FileManager.default.moveItem(atPath: trail, toPath: AuditTrailFile.path(ofStore: path))
        }
        try FileManager.default.moveItem(atPath: building, toPath: path)
    }

    /// Removes the files of the store being built at `building` (nothing once renamed).
    private static func remove(_ building: String) {
        for suffix in StoreFileModes.companions { try? FileManager.default.removeItem(atPath: building + suffix) }
    }
}
