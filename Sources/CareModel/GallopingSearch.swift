/// Finds the smallest index at which a monotone condition turns true, starting from a guess: it gallops
/// away from the guess with doubling steps until the answer is bracketed, then bisects. A good guess costs
/// a couple of probes; a bad one costs a few more (logarithmic in the error), never a walk from zero.
///
/// - Parameters:
///   - estimate: where the answer probably is (clamped to `0...`).
///   - holds: the condition; false below the answer and true from it on. Index 0 is checked first.
func firstIndex(near estimate: Int, where holds: (Int) -> Bool) -> Int {
    if holds(0) { return 0 }
    var below = 0  // holds(below) is false
    var above = max(1, estimate)
    if holds(above) {
        var step = 1
        while above - step > below {
            let candidate = above - step
            if holds(candidate) { above = candidate } else { below = candidate; break }
            step *= 2
        }
    } else {
        below = above
        var step = 1
        while true {
            let (candidate, overflow) = below.addingReportingOverflow(step)
            if overflow { above = Int.max; break }
            if holds(candidate) { above = candidate; break }
            below = candidate
            step *= 2
        }
    }
    while above - below > 1 {
        let middle = below + (above - below) / 2
        if holds(middle) { above = middle } else { below = middle }
    }
    return above
}
