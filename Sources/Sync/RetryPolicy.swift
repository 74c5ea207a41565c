import Foundation

/// When a request that failed in a way a retry can mend (no answer, a timeout, 429, a 5xx) is sent
/// again: up to `maxAttempts` times in all, after an exponential backoff with full jitter (a random wait
/// up to `baseDelay`·2ⁿ, capped at `maxDelay`), or after the server's `Retry-After` when it is longer
/// (up to `maxRetryAfter`: a server asking for more is treated as down). A client (one job) sends at
/// most `maxRetriesPerJob` retries in all: past that, every request gets its one attempt, so a server
/// that is down costs a job seconds, not the sum of every request's backoff.
public struct RetryPolicy: Sendable, Equatable {
    public var maxAttempts: Int
    public var baseDelay: TimeInterval
    public var maxDelay: TimeInterval
    public var maxRetryAfter: TimeInterval
    public var maxRetriesPerJob: Int

    public init(
        maxAttempts: Int = 5, baseDelay: TimeInterval = 0.5, maxDelay: TimeInterval = 30, maxRetryAfter: TimeInterval = 120,
        maxRetriesPerJob: Int = 100
    ) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = max(0, baseDelay)
        self.maxDelay = max(0, maxDelay)
        self.maxRetryAfter = max(0, maxRetryAfter)
        self.maxRetriesPerJob = max(0, maxRetriesPerJob)
    }

    /// One attempt, no retry.
    public static let none = RetryPolicy(maxAttempts: 1)

    /// The wait before attempt `attempt + 1` (after `attempt` failures, 1 or more), or nil when no
    /// attempt is left or the server asked for a wait longer than the policy allows.
    public func delay(afterFailures attempt: Int, retryAfter: TimeInterval?) -> TimeInterval? {
        guard attempt < maxAttempts else { return nil }
        if let retryAfter, retryAfter > maxRetryAfter { return nil }
        let ceiling = min(maxDelay, baseDelay * pow(2, Double(attempt - 1)))
        let backoff = Double.random(in: 0...max(ceiling, 0))
        return max(backoff, retryAfter ?? 0)
    }
}
