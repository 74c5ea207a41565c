import Foundation

/// How far a pull from one server has got for one resource type: the `_lastUpdated` cursor to resume from.
///
/// Written in the same batch as the entities it covers, so a crash never moves the cursor past data that
/// was not stored.
public struct SyncCheckpoint: Equatable, Sendable {
    /// The server's base URL.
    public var server: String
    /// The FHIR resource type pulled, such as `Observation`.
    public var resourceType: String
    /// The cursor (a FHIR instant, as the server wrote it) to pass as `_lastUpdated=gt...` next time.
    public var cursor: String
    /// When the checkpoint was written.
    public var updatedDate: Date

    public init(server: String, resourceType: String, cursor: String, updatedDate: Date = Date()) {
        self.server = server
        self.resourceType = resourceType
        self.cursor = cursor
        self.updatedDate = updatedDate
    }
}
