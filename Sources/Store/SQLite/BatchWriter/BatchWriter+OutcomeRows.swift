import CareModel
import Foundation
import GRDB

/// Writing an outcome version as rows: the `outcome` row, bound column by column (this runs once per
/// outcome) at the positions ``OutcomeRowLayout`` takes from ``EntityRowCodec``'s columns, and its
/// values after the first in `outcomeValue`.
extension BatchWriter {
    /// Writes an outcome version: the row and its values.
    mutating func insertOutcome(_ outcome: Outcome, after previous: Tip?, eventStart: Date) throws {
        var outcome = outcome
        setVersionFields(of: &outcome, after: previous)
        try writeOutcome(
            outcome, uuid: outcome.metadata.uuid, taskID: outcome.taskID, payload: try extras(of: outcome), after: previous,
            eventStart: eventStart)
        summary.versionUUIDs.append(outcome.metadata.uuid)
    }

    /// Gives `outcome` the store's version fields.
    func setVersionFields(of outcome: inout Outcome, after previous: Tip?) {
        outcome.metadata.deletedDate = nil
        outcome.metadata.previousVersionUUIDs = previous.map { [$0.uuid] } ?? []
        outcome.metadata.nextVersionUUIDs = []
        outcome.metadata.createdDate = now
        outcome.metadata.updatedDate = now
    }

    /// The JSON of an outcome's rarely used fields (`nil` when it has none).
    func extras(of outcome: Outcome) throws -> Data? {
        do {
            return try codec.outcomeExtras(outcome)
        } catch {
            throw StoreError.invalidEntity(kind: .outcome, id: outcome.id, reason: "cannot be encoded: \(error)")
        }
    }

    /// Binds the seven value columns (type, value, units, kind, index, createdDate, timezone), which the
    /// outcome row (its first value) and `outcomeValue` (the others) share, starting at `column`
    /// (``OutcomeRowLayout/valueColumns`` in both).
    mutating func bind(_ value: OutcomeValue, to statement: RawStatement, from column: Int32) {
        statement.bind(column, value.type.rawValue)
        statement.bind(column + 1, value.value)
        statement.bind(column + 2, value.units)
        statement.bind(column + 3, value.kind)
        statement.bind(column + 4, value.index)
        statement.bind(column + 5, value.createdDate?.storeSeconds)
        statement.bind(column + 6, value.timezone == .gmt ? nil : timeZoneName(value.timezone))
    }

    /// Writes the row and values of a version of `outcome`, with uuid `uuid`, task id `taskID` and the
    /// store's other version fields (whatever `outcome` holds there), and links it.
    mutating func writeOutcome(
        _ outcome: Outcome, uuid: UUID, taskID: String?, payload: Data?, after previous: Tip?, eventStart: Date, graph: GraphLinks? = nil
    ) throws {
        let provenance = outcome.metadata.provenance
        if outcomeInsert == nil {
            outcomeInsert = try db.cachedStatement(sql: EntityRowCodec.insertSQL[.outcome] ?? "")
        }
        guard let outcomeInsert else { return }
        let row = RawStatement(outcomeInsert, in: db)
        let at = OutcomeRowLayout.positions
        row.bind(at.uuid, uuid)
        row.bind(at.effectiveDate, outcome.metadata.effectiveDate.storeSeconds)
        if let deleted = graph?.deletedDate { row.bind(at.deletedDate, deleted.storeSeconds) } else { row.bindNull(at.deletedDate) }
        row.bind(at.previousVersionUUID, graph.map { $0.previous.first?.uuid } ?? previous?.uuid)
        row.bind(at.createdDate, now.storeSeconds)
        row.bind(at.updatedDate, now.storeSeconds)
        row.bind(at.sourceSystem, provenance?.sourceSystem)
        row.bind(at.fhirType, provenance?.fhirType)
        row.bind(at.fhirID, provenance?.fhirID)
        row.bind(at.fhirVersionID, provenance?.versionID)
        row.bind(at.fhirLastUpdated, provenance?.lastUpdated?.storeSeconds)
        row.bind(at.contentHash, provenance?.contentHash)
        row.bind(at.payload, payload)
        row.bind(at.taskUUID, outcome.taskUUID)
        row.bind(at.taskID, taskID)
        row.bind(at.occurrenceIndex, outcome.taskOccurrenceIndex)
        row.bind(at.eventStart, eventStart.storeSeconds)
        row.bind(at.timezone, timeZoneName(outcome.metadata.timezone))
        row.bind(at.versionNumber, graph?.versionNumber ?? previous.map { $0.versionNumber + 1 } ?? 0)
        if let first = outcome.values.first {
            bind(first, to: row, from: at.firstValue)
        } else {
            for column in at.firstValue..<(at.firstValue + OutcomeRowLayout.valueColumnCount) { row.bindNull(column) }
        }
        row.bind(at.extraValues, max(0, outcome.values.count - 1))
        row.bind(at.source, outcome.metadata.source)
        do {
            try row.execute()
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
            throw StoreError.idAlreadyExists(kind: .outcome, id: outcome.id)
        }
        let rowID = db.lastInsertedRowID
        if outcome.values.count > 1 {
            // The first value is in the row; the others go to `outcomeValue`, from position 1.
            let valueRow = RawStatement(try db.cachedStatement(sql: EntityRowCodec.insertValuesSQL()), in: db)
            for (position, value) in outcome.values.enumerated().dropFirst() {
                valueRow.bind(1, rowID)
                valueRow.bind(2, position)
                bind(value, to: valueRow, from: OutcomeRowLayout.firstValueInValuesRow)
                try valueRow.execute()
            }
        }
        try link(
            kind: .outcome, id: outcome.id, uuid: uuid, effectiveDate: outcome.metadata.effectiveDate, provenance: provenance,
            after: previous)
        if let graph {
            try linkGraph(graph.previous, to: uuid, rowID: rowID, effective: outcome.metadata.effectiveDate)
        } else if let previous, !previous.others.isEmpty {
            try linkGraph([previous] + previous.others, to: uuid, rowID: rowID, effective: outcome.metadata.effectiveDate)
            try setConflict(outcomeID: outcome.id, false)
        }
        if graph?.exports ?? Self.queuesForProvider(provenance) { try enqueueExport(outcomeID: outcome.id, uuid: uuid) }
        // The task version this batch checked the outcome against says whose it is, without a query.
        let owner: RevisionLog.Owner = taskVersionsRead[outcome.taskUUID].map {
            .inCarePlan($0.task.carePlanID, linkedPatient: $0.task.metadata.linkage.patientID)
        } ?? .taskVersion(outcome.taskUUID)
        try revisions.append(.outcome, uuid: uuid, rowID: rowID, owner: owner)
    }

    /// Time zone identifiers, looked up once per zone (reading `identifier` copies a string each time).
    mutating func timeZoneName(_ zone: TimeZone) -> String {
        if let known = zoneNames[zone] { return known }
        zoneNames[zone] = zone.identifier
        return zone.identifier
    }
}

/// The parameter positions of the outcome INSERT (``EntityRowCodec/insertSQL``), found by name in
/// ``EntityRowCodec/commonColumns`` and ``EntityRowCodec/specificColumns(_:)`` once: the writer binds an
/// outcome column by column, and these keep its binds in step with the codec's column list.
struct OutcomeRowLayout {
    /// The value columns in the order ``BatchWriter/bind(_:to:from:)`` binds them, as the outcome row
    /// names those of its first value.
    static let valueColumns = [
        "firstValueType", "firstValue", "firstValueUnits", "firstValueKind", "firstValueIndex",
        "firstValueCreatedDate", "firstValueTimezone",
    ]
    static let valueColumnCount = Int32(valueColumns.count)
    /// Where the value columns start in ``EntityRowCodec/insertValuesSQL()`` (after outcomeRowID, position).
    static let firstValueInValuesRow: Int32 = 3

    /// The positions, computed once.
    static let positions = OutcomeRowLayout(columns: EntityRowCodec.commonColumns + EntityRowCodec.specificColumns(.outcome))

    let uuid, effectiveDate, deletedDate, previousVersionUUID, createdDate, updatedDate: Int32
    let sourceSystem, fhirType, fhirID, fhirVersionID, fhirLastUpdated, contentHash, payload: Int32
    let taskUUID, taskID, occurrenceIndex, eventStart, timezone, versionNumber: Int32
    /// The first of the ``valueColumns``, which follow one another.
    let firstValue: Int32
    let extraValues, source: Int32
    /// How many parameters the INSERT has: every one is bound above.
    let count: Int

    init(columns: [String]) {
        func at(_ name: String) -> Int32 {
            guard let index = columns.firstIndex(of: name) else { preconditionFailure("the outcome table has no column \(name)") }
            return Int32(index + 1)
        }
        (uuid, effectiveDate, deletedDate, previousVersionUUID) = (at("uuid"), at("effectiveDate"), at("deletedDate"), at("previousVersionUUID"))
        (createdDate, updatedDate, sourceSystem, fhirType) = (at("createdDate"), at("updatedDate"), at("sourceSystem"), at("fhirType"))
        (fhirID, fhirVersionID, fhirLastUpdated, contentHash) = (at("fhirID"), at("fhirVersionID"), at("fhirLastUpdated"), at("contentHash"))
        (payload, taskUUID, taskID, occurrenceIndex) = (at("payload"), at("taskUUID"), at("taskID"), at("occurrenceIndex"))
        (eventStart, timezone, versionNumber) = (at("eventStart"), at("timezone"), at("versionNumber"))
        firstValue = at(Self.valueColumns[0])
        for (offset, name) in Self.valueColumns.enumerated() {
            precondition(at(name) == firstValue + Int32(offset), "the outcome's value columns must follow one another")
        }
        (extraValues, source) = (at("extraValues"), at("source"))
        count = columns.count
        // Every column is bound: 19 named ones, the value columns, and these two.
        precondition(count == 19 + Self.valueColumns.count + 2, "a column of the outcome table has no bind in BatchWriter.writeOutcome")
    }
}
