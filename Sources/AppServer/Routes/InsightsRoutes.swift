import Foundation
import Hummingbird
import Insights
import Pipeline
import Store

/// `GET /carekit/v1/insights?from=YYYY-MM-DD&to=YYYY-MM-DD[&timeZone=IANA]`: the token's patient's
/// Insights series, one value per day per series as CareKit's chart views take them: adherence as
/// CareKit's `fetchAdherence` computes it (percent; null for a day without tasks or events), then each
/// measurement's daily mean with its target band. The numbers are the ones `caregate report` shows.
struct InsightsRoutes {
    let store: any AsyncAppStore
    let rules: InsightsRules
    /// The longest period one request may ask for, in days.
    static let maximumDays = 366

    func register(on group: RouterGroup<AppRequestContext>) {
        group.get("insights") { request, context in try await insights(request, context) }
    }

    /// The patient's series of the period `from`...`to`, read in one unit of the store, drawn on the
    /// request's task.
    private func insights(_ request: Request, _ context: AppRequestContext) async throws -> Response {
        let patientID = try context.patientID()
        let parameters = request.uri.queryParameters
        let (zoneName, from, to) = (parameters.get("timeZone"), parameters.get("from"), parameters.get("to"))
        let rules = rules
        let input = try await store.read { try Self.input(patientID: patientID, zoneName: zoneName, from: from, to: to, rules: rules, in: $0) }
        let series = CareTeamReport.make(input).insights
        context.auditNote.set("\(series.days.count) days, \(series.series.count) series")
        // A series that cannot be written (a number not finite) is a 500 that reveals nothing, never `{}`.
        return JSONResponse.make(try series.json())
    }

    /// What the series of the period `from`...`to` (`YYYY-MM-DD`, in the zone named `zoneName`, else the
    /// patient's) are drawn from; 400 or 404 as the route answers.
    private static func input(
        patientID: String, zoneName: String?, from fromText: String?, to toText: String?, rules: InsightsRules, in store: any AppSyncStore
    ) throws -> CareTeamReport.Input {
        guard let patient = try store.patients(EntityQuery(ids: [patientID])).first else { throw APIError.notFound }
        let zone = try ViewRoutes.zone(named: zoneName, patient: patient)
        guard let fromText, let toText else {
            throw APIError.badRequest("from=YYYY-MM-DD and to=YYYY-MM-DD are required")
        }
        guard let first = DayText.interval(fromText, in: zone), let last = DayText.interval(toText, in: zone) else {
            throw APIError.badRequest("from and to must be calendar dates, YYYY-MM-DD")
        }
        guard first.start <= last.start else { throw APIError.badRequest("to is before from") }
        let interval = DateInterval(start: first.start, end: last.end)
        guard interval.duration <= Double(Self.maximumDays) * 86_400 + 7_200 else {
            throw APIError.badRequest("a period of at most \(Self.maximumDays) days")
        }
        return try ReportInput.read(
            generator: "CareGate app API", store: store, patientID: patientID, interval: interval, timeZone: zone, rules: rules,
            strategy: .checkingOutcomeExists)
    }
}
