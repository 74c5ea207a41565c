import CareModel
import Foundation
import NIOPosix
import PostgresNIO
import Store

/// A streaming read: one SELECT of entity versions (one snapshot, as SQLite's cursor is), read by a task
/// on the pool and handed to the calling thread a page at a time, so that millions of outcomes never sit
/// in memory at once.
///
/// The task decodes a page of ``pageSize`` versions and waits (without holding a thread) while
/// ``buffered`` pages wait for the caller; postgres-nio's row stream then stops reading from the socket,
/// so the server's rows stay on the server. The caller's `body` runs on the caller's own thread (it may
/// read the store again: it never runs on a thread the pool needs). When `body` throws, the read is
/// abandoned and the statement's rows are dropped.
enum ReadPages {
    static let pageSize = 1_000
    static let buffered = 2

    static func forEach(
        _ kind: EntityKind, _ select: ReadQuery, in database: PostgresDatabase, _ body: (CareEntity) throws -> Void
    ) throws {
        guard MultiThreadedEventLoopGroup.currentEventLoop == nil else { throw PostgresStoreError.calledOnEventLoop }
        let handoff = Handoff()
        let client = database.client
        let url = database.location.redacted
        let query = select.query
        let producer = Task.detached {
            do {
                try await client.withConnection { connection in
                    var page: [CareEntity] = []
                    page.reserveCapacity(pageSize)
                    for try await row in try await connection.query(query, logger: PostgreSQLStore.logger) {
                        page.append(try PostgresEntityCodec.decode(kind: kind, row: row).entity)
                        if page.count == pageSize {
                            guard await handoff.put(page) else { return }
                            page.removeAll(keepingCapacity: true)
                        }
                    }
                    if !page.isEmpty { _ = await handoff.put(page) }
                }
                handoff.finish(nil)
            } catch let error as PSQLError {
                handoff.finish(PostgresStoreError.server(url: url, problem: PostgresDatabase.message(error)))
            } catch {
                handoff.finish(error)
            }
        }
        defer {
            handoff.cancel()
            producer.cancel()
        }
        while let page = try handoff.next(timeout: database.timeout, url: url) {
            for entity in page { try body(entity) }
        }
    }

    /// The pages between the reading task and the calling thread.
    private final class Handoff: @unchecked Sendable {
        private let condition = NSCondition()
        private var pages: [[CareEntity]] = []
        private var ended = false
        private var failure: (any Error)?
        private var cancelled = false
        /// The reading task, waiting for the caller to take a page.
        private var waiting: CheckedContinuation<Bool, Never>?

        /// Hands `page` over; false once the caller stopped reading.
        func put(_ page: [CareEntity]) async -> Bool {
            let full: Bool? = condition.withLock {
                guard !cancelled else { return nil }
                pages.append(page)
                condition.broadcast()
                return pages.count >= ReadPages.buffered
            }
            guard let full else { return false }
            guard full else { return true }
            return await withCheckedContinuation { continuation in
                condition.withLock {
                    if cancelled || pages.count < ReadPages.buffered {
                        continuation.resume(returning: !cancelled)
                    } else {
                        waiting = continuation
                    }
                }
            }
        }

        func finish(_ error: (any Error)?) {
            condition.withLock {
                ended = true
                failure = error
                condition.broadcast()
            }
        }

        /// The next page, nil at the end; waits at most `timeout` for one.
        func next(timeout: Duration, url: String) throws -> [CareEntity]? {
            let deadline = Date().addingTimeInterval(timeout.inSeconds)
            condition.lock()
            while pages.isEmpty && !ended {
                guard condition.wait(until: deadline) else {
                    condition.unlock()
                    throw PostgresStoreError.server(url: url, problem: "no rows within \(timeout) of a streaming read")
                }
            }
            guard !pages.isEmpty else {
                let failure = failure
                condition.unlock()
                if let failure { throw failure }
                return nil
            }
            let page = pages.removeFirst()
            let resumed = waiting
            waiting = nil
            condition.unlock()
            resumed?.resume(returning: true)
            return page
        }

        /// The caller stops reading: the task's next hand-over answers false.
        func cancel() {
            let resumed: CheckedContinuation<Bool, Never>? = condition.withLock {
                cancelled = true
                defer { waiting = nil }
                return waiting
            }
            resumed?.resume(returning: false)
        }
    }
}
