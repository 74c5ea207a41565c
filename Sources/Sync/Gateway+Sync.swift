import Foundation
import Mapping
import Pipeline
import Store

extension Gateway {
    /// The sync job against the FHIR server of `configuration`, over this gateway's store and mappings:
    /// pull (search or Bulk Data) and import, then push the outbox.
    public func syncJob(configuration: SyncConfiguration, client: FHIRClient) throws -> SyncJob {
        SyncJob(configuration: configuration, store: store, mappings: try mappings(), client: client)
    }

    /// Runs one sync (``syncJob(configuration:client:)``).
    @discardableResult
    public func sync(configuration: SyncConfiguration, client: FHIRClient, now: Date = Date()) throws -> SyncReport {
        try syncJob(configuration: configuration, client: client).run(now: now)
    }
}

extension SyncReport: JobReport {}
