import CareModel
import Foundation

extension PushBody {
    /// Refuses a push whose outcomes carry a number that is not finite or whose sums and means could not
    /// be represented (``OutcomeNumberBounds``): 422 `invalid`, naming the value's JSON path
    /// (`deviceRevisions[0].entities[1].object.values[0].value`), never the value itself.
    ///
    /// Checked before anything is read from the store: such a value, once stored, would overflow the
    /// patient's Insights (two values of 1e308 of one kind sum to infinity, which JSON cannot carry).
    func checkOutcomeNumbers() throws {
        for (r, record) in deviceRevisions.enumerated() {
            for (e, item) in record.entities.enumerated() {
                guard case .outcome(let outcome) = item.entity, let problem = OutcomeNumberBounds.firstProblem(in: outcome) else { continue }
                throw APIError(
                    .unprocessableContent, code: "invalid",
                    message: "deviceRevisions[\(r)].entities[\(e)].object.\(problem.path): \(problem.reason)")
            }
        }
    }
}
