import Foundation
import Hummingbird
import NIOCore
import Store
import Synchronization

/// The context of one request of the app API: the verified token (set by ``PatientAccessMiddleware``),
/// the client's address, and what the audit trail should say of the answer.
public struct AppRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The token that came with the request, once verified.
    public var token: VerifiedToken?
    /// A line for the audit trail, written by the handler (counts, never patient data).
    public let auditNote = AuditNote()
    /// Whether the access middleware left the check that the token's patient is in the store to the route,
    /// which makes it in the read it makes anyway (an up-to-date pull: ``PatientAccessMiddleware``).
    var patientCheckLeftToRoute = false
    /// The address of the connection's peer (nil for a connection that has none, as in-process tests').
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }

    /// The client's IP address as the audit trail keeps it (BALP's `agent.network`, type 2); nil when
    /// the connection has no IP peer. The peer of the connection, never a header a client could forge:
    /// behind a reverse proxy it is the proxy's address (Docs/audit-events.md).
    var clientAddress: String? { remoteAddress?.ipAddress }

    /// Pushes are bounded by ``AppServerLimits/maximumPushBytes``.
    public var maxUploadSize: Int { AppServerLimits.maximumPushBytes }

    /// The patient the token opens; a handler reached without one is a server bug, answered as 401.
    func patientID() throws -> String {
        guard let token else { throw APIError.unauthorized(.missing) }
        return token.patientID
    }
}

/// What a handler tells the audit trail of its answer.
public final class AuditNote: Sendable {
    private let text = Mutex<String?>(nil)

    public var value: String? { text.withLock { $0 } }

    func set(_ value: String) { text.withLock { $0 = value } }
}

/// Bounds on what a client may send.
public enum AppServerLimits {
    /// The largest push body.
    public static let maximumPushBytes = 8 << 20
    /// The most entities one push may carry.
    public static let maximumPushEntities = 10_000
    /// The most revision records one push may carry.
    public static let maximumPushRecords = 10_000
    /// The most processes a knowledge vector may name.
    public static let maximumVectorProcesses = 1_000
    /// The most device processes one push may add to a patient's vector, and the most that vector serves
    /// (the store enforces both: ``DeviceKnowledgeLimits``; Docs/security.md, "Knowledge vectors").
    public static let maximumNewProcessesPerPush = DeviceKnowledgeLimits.newProcessesPerPush
    public static let maximumPatientProcesses = DeviceKnowledgeLimits.processesPerPatient
    /// Entities per page of a pull.
    public static let pullPageEntities = 1_000
}
