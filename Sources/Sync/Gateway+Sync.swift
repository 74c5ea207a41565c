import Foundation
import Mapping
import Pipeline
import Store

extension Gateway {
    /// The sync job against the FHIR server of `configuration`, over this gateway's store, mappings and
    /// options: pull (search or Bulk Data) and import, then push the outbox. Local times are read in the
    /// configuration's `time-zone` when it names one.
    public func syncJob(configuration: SyncConfiguration, client: FHIRClient) throws -> SyncJob {
        var options = self.options
        if let zone = configuration.timeZone.flatMap(TimeZone.init(identifier:)) { options.timeZone = zone }
        return SyncJob(configuration: configuration, gateway: Gateway(store: store, mappings: try mappings(), options: options), client: client)
    }

    /// Runs one sync (``syncJob(configuration:client:)``).
    @discardableResult
    public func sync(configuration: SyncConfiguration, client: FHIRClient, now: Date = Date()) throws -> SyncReport {
        try syncJob(configuration: configuration, client: client).run(now: now)
    }
}

extension SyncReport: JobReport {}
