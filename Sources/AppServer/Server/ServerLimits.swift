import Foundation

/// What `caregate serve` accepts of its clients at once: how long a connection may stay idle or take to
/// send a request, how many connections and request bodies it holds, and how many threads may wait for
/// the store on behalf of pushes (and of reads: ``readThreads``).
///
/// Anyone who can connect can open connections and send slowly; each limit turns what a stranger could
/// hold for ever into something the server sheds. Docs/security.md ("Connections and bodies the app
/// server accepts") says why each default is what it is.
///
/// ```swift
/// var limits = ServerLimits()
/// limits.idleTimeout = 5
/// let server = AppServer(store: store, key: key, limits: limits)
/// ```
///
/// ## Topics
///
/// - ``idleTimeout``, ``requestTimeout``: time a connection may take.
/// - ``maxConnections``, ``maxUploads``, ``pushWorkers``: how much the server holds at once.
/// - ``uploadRetryAfterSeconds``, ``idleGraceAtCapacity``: what a client is told past the upload cap, and
///   how soon idle connections are shed at the connection cap.
public struct ServerLimits: Sendable, Equatable {
    /// Seconds a connection may stay open with no request under way (before its first request, between
    /// two, or while the head of a request trickles in) before the server closes it.
    public var idleTimeout: Double
    /// Seconds from a request's head to the end of its body: a body trickled in slowly is cut off then,
    /// however often its bytes arrive.
    public var requestTimeout: Double
    /// Connections open at once; past it new connections wait in the listen backlog, and idle ones are
    /// closed after ``idleGraceAtCapacity`` to make room.
    public var maxConnections: Int
    /// Requests with a body (pushes) read at once; past it a request is answered 503 with `Retry-After`.
    public var maxUploads: Int
    /// Threads that run pushes against the store (each may wait for the store's writer); more pushes wait
    /// in a queue, holding no thread.
    public var pushWorkers: Int

    public static let defaultIdleTimeout: Double = 30
    public static let defaultRequestTimeout: Double = 60
    public static let defaultMaxConnections = 1_000
    public static let defaultMaxUploads = 16
    public static let defaultPushWorkers = 4

    /// The bounds each limit is checked against (by `caregate serve`'s options).
    public static let timeoutRange: ClosedRange<Double> = 0.1...3_600
    public static let connectionsRange: ClosedRange<Int> = 1...1_000_000
    public static let uploadsRange: ClosedRange<Int> = 1...10_000
    public static let pushWorkersRange: ClosedRange<Int> = 1...256

    /// The most reads of the store the server runs at once (``PooledAppStore``'s read slots and read
    /// threads): one per core, at least 4, at most 16.
    public static let readThreads = min(16, max(4, ProcessInfo.processInfo.activeProcessorCount))

    /// The reader connections `caregate serve` opens its store with: one per read and one per push worker
    /// (a push reads as it checks), so that a read holding a slot never waits for a connection.
    public static func storeReaders(pushWorkers: Int) -> Int {
        readThreads + pushWorkers
    }

    /// The `Retry-After` of a push refused past ``maxUploads``: a push takes well under a second.
    public static let uploadRetryAfterSeconds = 5
    /// At the connection cap, a connection idle this long is closed at once rather than at
    /// ``idleTimeout``: a client waiting in the backlog is worth more than one that sends nothing.
    public static let idleGraceAtCapacity: Double = 1

    public init(
        idleTimeout: Double = defaultIdleTimeout, requestTimeout: Double = defaultRequestTimeout, maxConnections: Int = defaultMaxConnections,
        maxUploads: Int = defaultMaxUploads, pushWorkers: Int = defaultPushWorkers
    ) {
        self.idleTimeout = idleTimeout
        self.requestTimeout = requestTimeout
        self.maxConnections = maxConnections
        self.maxUploads = maxUploads
        self.pushWorkers = pushWorkers
    }
}
