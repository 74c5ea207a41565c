import Foundation
import Hummingbird
import Store

/// CareKit's remote sync: pull (`GET /carekit/v1/revisions`) and push (`POST /carekit/v1/revisions`).
struct SyncRoutes {
    let store: any AppSyncStore

    func register(on group: RouterGroup<AppRequestContext>) {
        group.get("revisions") { _, context -> Response in
            _ = try context.patientID()
            throw APIError(.notImplemented, code: "not-implemented", message: "pull is not available yet")
        }
        group.post("revisions") { _, context -> Response in
            _ = try context.patientID()
            throw APIError(.notImplemented, code: "not-implemented", message: "push is not available yet")
        }
    }
}
