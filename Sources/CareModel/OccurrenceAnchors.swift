import Foundation
import Synchronization

/// The checked points of one element's occurrence sequence from which ``OccurrenceRule/jump(from:by:)``
/// gives CareKit's dates: found on demand, kept for later queries, shared by copies of the element.
///
/// Anchor 0 is the element's start. From each anchor the shortcut holds up to (not including) the next
/// anchor; from the last one it holds forever once `complete` is set. A new anchor is placed at the last
/// occurrence before a time-zone transition (less a few hours' margin) and at each clamped day of the
/// month; CareKit's single steps carry the sequence across the transition. Transitions that cannot move a
/// step (a daily 09:00 never meets New York's 02:00 change) are passed over. That is at most a few
/// anchors a year, none in UTC, so the events of a day years after the start cost a few calendar calls
/// per transition on the first query and a binary search after that.
final class OccurrenceAnchors: Sendable {
    struct Anchor {
        let index: Int
        let start: Date
    }

    /// How far before and after a transition CareKit's single steps are used instead of the shortcut:
    /// wider than the usual one- or two-hour change of the clocks.
    static let margin: TimeInterval = 6 * 3600
    /// Occurrences are followed no further than this (year 4001), and none starts after it: CareKit would
    /// never get there either, and an absurd occurrence index in an outcome, or a query thousands of years
    /// ahead, must not start a walk through millions of transitions or occurrences.
    static let horizon = Date.distantFuture

    private let table: Mutex<Table>

    init(rule: OccurrenceRule, start: Date) {
        table = Mutex(Table(rule: rule, start: start))
    }

    /// The start of occurrence `n`, ignoring the element's end; `nil` if it does not exist (negative, past
    /// a date overflow, or after ``horizon``).
    func start(ofOccurrence n: Int) -> Date? {
        table.withLock { $0.start(ofOccurrence: n) }
    }

    /// The smallest `n` whose start is at or after `date` (strictly after when `strictlyAfter`), ignoring
    /// the element's end; dates after ``horizon`` count as the horizon.
    func firstOccurrence(startingAtOrAfter date: Date, strictlyAfter: Bool) -> Int {
        table.withLock { $0.firstOccurrence(startingAtOrAfter: date, strictlyAfter: strictlyAfter) }
    }

    /// The anchors found so far and how to find more: the state the mutex guards.
    private struct Table {
        let rule: OccurrenceRule
        var anchors: [Anchor]
        /// Whether the shortcut holds from the last anchor on (no transition or clamp follows).
        var complete: Bool
        /// Occurrences from this index on do not exist (a date overflowed).
        var endIndex: Int?

        init(rule: OccurrenceRule, start: Date) {
            self.rule = rule
            anchors = [Anchor(index: 0, start: start)]
            if case .fixed = rule.progression { complete = true } else { complete = false }
        }

        /// The start of occurrence `n`, ignoring the element's end; `nil` if it does not exist (negative, past
        /// a date overflow, or after ``horizon``).
        mutating func start(ofOccurrence n: Int) -> Date? {
            guard n >= 0 else { return nil }
            while !complete, let last = anchors.last, last.index <= n {
                if last.start > OccurrenceAnchors.horizon { return nil }
                let ahead = Double(n - last.index) * rule.approximateSeconds
                extend(toward: last.start.addingTimeInterval(ahead.isFinite ? min(ahead, 1e11) : 1e11))
            }
            if let endIndex, n >= endIndex { return nil }
            let anchor = anchors[lastAnchor { $0.index <= n } ?? 0]
            // Nothing exists after the horizon, whatever the progression: a query or an index that reaches past
            // it ends there instead of walking on, occurrence by occurrence.
            guard let start = rule.jump(from: anchor.start, by: n - anchor.index), start <= OccurrenceAnchors.horizon else { return nil }
            return start
        }

        /// The smallest `n` whose start is at or after `date` (strictly after when `strictlyAfter`), ignoring
        /// the element's end; dates after ``horizon`` count as the horizon.
        mutating func firstOccurrence(startingAtOrAfter date: Date, strictlyAfter: Bool) -> Int {
            let date = min(date, OccurrenceAnchors.horizon)
            func holds(_ start: Date) -> Bool { strictlyAfter ? start > date : start >= date }
            while !complete, let last = anchors.last, !holds(last.start) {
                extend(toward: date)
            }
            guard let position = lastAnchor(where: { !holds($0.start) }) else { return 0 }
            let anchor = anchors[position]
            let count: Int
            if position + 1 < anchors.count {
                count = anchors[position + 1].index - anchor.index
            } else {
                count = endIndex.map { $0 - anchor.index } ?? Int.max
            }
            let j = firstIndex(near: estimatedSteps(from: anchor.start, to: date)) { j in
                guard j < count, let start = rule.jump(from: anchor.start, by: j) else { return true }
                return holds(start)
            }
            return anchor.index + j
        }

        /// The position of the last anchor for which `test` holds (anchors are in index and start order and
        /// `test` holds for a prefix), or `nil` if it holds for none.
        private func lastAnchor(where test: (Anchor) -> Bool) -> Int? {
            var low = 0
            var high = anchors.count  // test fails from `high` on
            while low < high {
                let middle = low + (high - low) / 2
                if test(anchors[middle]) { low = middle + 1 } else { high = middle }
            }
            return low == 0 ? nil : low - 1
        }

        /// A guess of how many steps lie between `anchor` and `date`.
        private func estimatedSteps(from anchor: Date, to date: Date) -> Int {
            guard rule.approximateSeconds > 0 else { return 0 }
            let guess = (date.timeIntervalSince(anchor) / rule.approximateSeconds).rounded(.down)
            guard guess.isFinite, guess > 0 else { return 0 }
            return guess >= Double(Int.max / 4) ? Int.max / 4 : Int(guess)
        }

        /// Adds the next anchor, or marks the sequence complete or ended; `target` is roughly how far the
        /// caller needs to get.
        mutating func extend(toward target: Date) {
            guard !complete, let last = anchors.last else { return }
            switch rule.progression {
            case .fixed:
                complete = true
            case .stepwise:
                appendStep(from: last)
            case .linear:
                let transition = nextRelevantTransition(after: last.start.addingTimeInterval(-OccurrenceAnchors.margin), anchor: last.start,
                                                        lookingUntil: max(target, last.start.addingTimeInterval(366 * 86_400)))
                let safeBefore = transition?.addingTimeInterval(-OccurrenceAnchors.margin)
                if let safeBefore, last.start >= safeBefore {
                    appendStep(from: last)  // inside the transition's margin: CareKit's own steps
                    return
                }
                // The next anchor: the last occurrence before the margin, or the first clamped day if earlier.
                var reach: Int?
                if let safeBefore {
                    let firstUnsafe = firstIndex(near: estimatedSteps(from: last.start, to: safeBefore)) { j in
                        guard j > 0, let start = rule.jump(from: last.start, by: j) else { return j > 0 }
                        return start >= safeBefore
                    }
                    reach = firstUnsafe - 1
                }
                if let clamp = rule.firstClamp(from: last.start, limit: reach ?? Int.max) {
                    reach = clamp
                }
                guard let reach else {
                    complete = true
                    return
                }
                guard reach > 0 else {
                    appendStep(from: last)
                    return
                }
                let (index, overflow) = last.index.addingReportingOverflow(reach)
                guard !overflow, let start = rule.jump(from: last.start, by: reach) else {
                    endIndex = overflow ? Int.max : index
                    complete = true
                    return
                }
                anchors.append(Anchor(index: index, start: start))
            }
        }

        /// The first time-zone transition after `date` that can change a step from `anchor` on. A rule that
        /// keeps the wall-clock time of day (days, weeks, months or years without hours; all-day) only notices
        /// a transition when a step lands on a skipped or repeated wall-clock time, so a transition whose
        /// changed times are far from that time of day is passed over, up to `limit` (the first transition
        /// after it is returned as if it mattered: the caller only needs to get that far for now).
        private func nextRelevantTransition(after date: Date, anchor: Date, lookingUntil limit: Date) -> Date? {
            let timeZone = rule.calendar.timeZone
            var transition = timeZone.nextDaylightSavingTimeTransition(after: date)
            guard rule.keepsTimeOfDay else { return transition }
            var times = [secondOfDay(anchor)]
            if rule.isAllDay { times.append(0) }
            while let current = transition, current <= limit {
                let before = timeZone.secondsFromGMT(for: current.addingTimeInterval(-1))
                let change = abs(timeZone.secondsFromGMT(for: current) - before)
                let local = (current.timeIntervalSince1970 + Double(before)).truncatingRemainder(dividingBy: 86_400)
                let transitionSecond = local < 0 ? local + 86_400 : local
                let affected = times.contains { time in
                    let distance = abs(time - transitionSecond)
                    return min(distance, 86_400 - distance) <= Double(change) + 60
                }
                if affected { return current }
                transition = timeZone.nextDaylightSavingTimeTransition(after: current)
            }
            return transition
        }

        /// Seconds since local midnight of `date`'s wall-clock time in the rule's time zone.
        private func secondOfDay(_ date: Date) -> Double {
            let local = date.timeIntervalSince1970 + Double(rule.calendar.timeZone.secondsFromGMT(for: date))
            let second = local.truncatingRemainder(dividingBy: 86_400)
            return second < 0 ? second + 86_400 : second
        }

        /// Adds the anchor one CareKit step after `last`.
        mutating func appendStep(from last: Anchor) {
            guard let next = rule.step(from: last.start), last.index < Int.max else {
                endIndex = last.index + (last.index < Int.max ? 1 : 0)
                complete = true
                return
            }
            anchors.append(Anchor(index: last.index + 1, start: next))
        }
    }
}
