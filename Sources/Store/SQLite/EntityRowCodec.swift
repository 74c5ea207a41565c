import CareModel
import Foundation
import GRDB

/// Turns care entities into rows of their tables and back.
///
/// Patients, care plans, contacts and tasks keep their whole content as JSON in `payload` (CareModel's
/// Codable encoding), beside the version, provenance and query columns. Outcomes are the bulk of a store
/// (millions of rows), so they are kept as columns, their first value in the row too and any others in
/// `outcomeValue`, and JSON only for the rarely used fields (tags, notes, userInfo...) when an outcome has
/// any (`source`, which apps always set, is a column). On reading, the version columns are authoritative: later versions update them (`nextVersionUUID`).
final class EntityRowCodec {
    private let decoder = JSONDecoder()
    private var timeZones: [String: TimeZone] = [:]
    /// The column layout of the rows read last (a read decodes many rows of one statement).
    private var layout: RowColumns?
    /// Set while decoding rows known to share `layout` (``withLayout(of:_:)``): no check per row.
    private var layoutIsKnown = false

    /// Runs `body` with the layout of `rows` (rows of one statement, which share it) taken as known.
    func withLayout<T>(of rows: [Row], _ body: () throws -> T) rethrows -> T {
        guard let first = rows.first else { return try body() }
        layout = RowColumns(first)
        layoutIsKnown = true
        defer { layoutIsKnown = false }
        return try body()
    }

    /// The columns of `row`, by name.
    private func columns(of row: Row) -> RowColumns {
        if let layout, layoutIsKnown || layout.matches(row) { return layout }
        let fresh = RowColumns(row)
        layout = fresh
        return fresh
    }

    // MARK: Columns

    /// The columns every entity table shares, in the order of ``commonValues(_:kind:)``.
    static let commonColumns = [
        "uuid", "effectiveDate", "deletedDate", "previousVersionUUID", "createdDate", "updatedDate",
        "sourceSystem", "fhirType", "fhirID", "fhirVersionID", "fhirLastUpdated", "contentHash", "payload",
    ]

    /// The columns of `kind` beyond the common ones, in the order of ``specificValues(_:)``.
    static func specificColumns(_ kind: EntityKind) -> [String] {
        switch kind {
        case .patient: return ["id"]
        case .carePlan: return ["id", "patientUUID", "patientID"]
        case .contact, .task: return ["id", "carePlanUUID", "carePlanID"]
        case .outcome:
            return [
                "taskUUID", "taskID", "occurrenceIndex", "eventStart", "timezone", "versionNumber",
                "firstValueType", "firstValue", "firstValueUnits", "firstValueKind", "firstValueIndex",
                "firstValueCreatedDate", "firstValueTimezone", "extraValues", "source",
            ]
        }
    }

    /// The INSERT statement of each kind, made once.
    static let insertSQL: [EntityKind: String] = Dictionary(uniqueKeysWithValues: EntityKind.allCases.map { ($0, makeInsertSQL($0)) })

    private static func makeInsertSQL(_ kind: EntityKind) -> String {
        let columns = commonColumns + specificColumns(kind)
        let table = StoreSchema.Table.entity(kind)
        return "INSERT INTO \(table) (\(columns.joined(separator: ", "))) VALUES (\(SQLText.placeholders(columns.count)))"
    }

    /// The common column values of a version whose metadata is already the stored one.
    func commonValues(_ metadata: EntityMetadata, payload: Data?) -> [(any DatabaseValueConvertible)?] {
        let provenance = metadata.provenance
        return [
            metadata.uuid, metadata.effectiveDate.storeSeconds, metadata.deletedDate?.storeSeconds,
            metadata.previousVersionUUIDs.last, metadata.createdDate?.storeSeconds, metadata.updatedDate?.storeSeconds,
            provenance?.sourceSystem, provenance?.fhirType, provenance?.fhirID, provenance?.versionID,
            provenance?.lastUpdated?.storeSeconds, provenance?.contentHash, payload,
        ]
    }

    /// Binds the values of ``insertSQL`` of `entity` (not an outcome: its rows have their own binds,
    /// `BatchWriter+OutcomeRows`) whose metadata is already the stored one: those of
    /// ``commonValues(_:payload:)`` and ``specificValues(_:eventStart:)``, in their order and each as
    /// GRDB converts it (a uuid as its 16 bytes, a date as its store seconds), bound by its own type
    /// rather than through an array of existentials (17,000 instructions a row).
    func bindInsert(_ entity: CareEntity, metadata: EntityMetadata, payload: Data?, to statement: RawStatement) {
        let provenance = metadata.provenance
        statement.bind(1, metadata.uuid)
        statement.bind(2, metadata.effectiveDate.storeSeconds)
        statement.bind(3, metadata.deletedDate?.storeSeconds)
        statement.bind(4, metadata.previousVersionUUIDs.last)
        statement.bind(5, metadata.createdDate?.storeSeconds)
        statement.bind(6, metadata.updatedDate?.storeSeconds)
        statement.bind(7, provenance?.sourceSystem)
        statement.bind(8, provenance?.fhirType)
        statement.bind(9, provenance?.fhirID)
        statement.bind(10, provenance?.versionID)
        statement.bind(11, provenance?.lastUpdated?.storeSeconds)
        statement.bind(12, provenance?.contentHash)
        statement.bind(13, payload?.databaseValue ?? .null)
        switch entity {
        case .patient(let value):
            statement.bind(14, value.id)
        case .carePlan(let value):
            statement.bind(14, value.id)
            statement.bind(15, value.patientUUID)
            statement.bind(16, value.patientID)
        case .contact(let value):
            statement.bind(14, value.id)
            statement.bind(15, value.carePlanUUID)
            statement.bind(16, value.carePlanID)
        case .task(let value):
            statement.bind(14, value.id)
            statement.bind(15, value.carePlanUUID)
            statement.bind(16, value.carePlanID)
        case .outcome:
            // Not reached (outcomes are inserted by `BatchWriter.insertOutcome`); bound as the general path would.
            statement.bind(commonValues(metadata, payload: payload) + Self.specificValues(entity, eventStart: nil))
        }
    }

    /// The JSON payload of an entity other than an outcome: its content JSON, the version fields and the
    /// content hash being columns.
    func payload(_ entity: CareEntity) throws -> Data? {
        if case .outcome(let value) = entity { return try outcomeExtras(value) }
        return try ContentJSON.payload(of: entity)
    }

    /// The JSON of an outcome's rarely used fields, or `nil` when it has none.
    func outcomeExtras(_ outcome: Outcome) throws -> Data? {
        guard Self.hasExtras(outcome.metadata) else { return nil }
        var stripped = outcome
        stripped.values = []
        stripped.metadata.source = nil  // a column
        return try CareKitJSON.encode(stripped)
    }

    /// Whether an outcome with `metadata` has any of the rarely used fields kept as JSON.
    static func hasExtras(_ metadata: EntityMetadata) -> Bool {
        metadata.schemaVersion != nil || metadata.groupIdentifier != nil || metadata.tags != nil
            || metadata.remoteID != nil || metadata.userInfo != nil
            || metadata.asset != nil || metadata.notes != nil
    }

    /// The kind-specific column values.
    static func specificValues(_ entity: CareEntity, eventStart: Date?) -> [(any DatabaseValueConvertible)?] {
        switch entity {
        case .patient(let value): return [value.id]
        case .carePlan(let value): return [value.id, value.patientUUID, value.patientID]
        case .contact(let value): return [value.id, value.carePlanUUID, value.carePlanID]
        case .task(let value): return [value.id, value.carePlanUUID, value.carePlanID]
        case .outcome(let value):
            let first = value.values.first
            return [
                value.taskUUID, value.taskID, value.taskOccurrenceIndex, eventStart?.storeSeconds, value.timezone.identifier, 0,
                first?.type.rawValue, first.map { valueColumn($0.value) }, first?.units, first?.kind, first?.index,
                first?.createdDate?.storeSeconds, first.flatMap { $0.timezone == .gmt ? nil : $0.timezone.identifier },
                max(0, value.values.count - 1), value.metadata.source,
            ]
        }
    }

    static func insertValuesSQL() -> String {
        "INSERT INTO outcomeValue (outcomeRowID, position, type, value, units, kind, valueIndex, createdDate, timezone) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
    }

    static func valueColumn(_ value: OutcomeValue.Value) -> any DatabaseValueConvertible {
        switch value {
        case .integer(let v): return v
        case .double(let v): return v
        case .boolean(let v): return v
        case .text(let v): return v
        case .binary(let v): return v
        case .date(let v): return v.storeSeconds
        }
    }

    // MARK: Rows to entities

    /// The entity of `kind` in `row` (a `SELECT *` row); outcome values come from `values`.
    func entity(_ kind: EntityKind, row: Row, values: [OutcomeValue] = []) throws -> CareEntity {
        switch kind {
        case .patient: return .patient(try decode(Patient.self, row))
        case .carePlan: return .carePlan(try decode(CarePlan.self, row))
        case .contact: return .contact(try decode(Contact.self, row))
        case .task: return .task(try decode(CareTask.self, row))
        case .outcome: return .outcome(try outcome(row, values: values))
        }
    }

    func decode<E: VersionedEntity>(_ type: E.Type, _ row: Row) throws -> E {
        let c = columns(of: row)
        guard let payload: Data = c[row, "payload"] else {
            throw StoreError.database(message: "\(E.kind) row \(row["rowID"] ?? "?") has no payload")
        }
        do {
            var entity = try decoder.decode(E.self, from: payload)
            applyVersionColumns(row, to: &entity.metadata)
            return entity
        } catch {
            throw StoreError.database(message: "\(E.kind) row \(row["rowID"] ?? "?") cannot be decoded: \(error)")
        }
    }

    /// A task from its row: its content decoded once per store (kept in `cache` by version uuid, as a
    /// version's content never changes), its version fields from `row`. `payloadRow` gives the row with
    /// the payload when `row` has only the version columns.
    func task(_ row: Row, cache: TaskVersionCache, payloadRow: (Row) throws -> Row = { $0 }) throws -> CareTask {
        if let uuid: UUID = row["uuid"], var task = cache.content(uuid) {
            applyVersionColumns(row, to: &task.metadata)
            return task
        }
        let full = try payloadRow(row)
        // A row of another statement has its own layout: it is checked, not taken as known.
        let (known, knownLayout) = (layoutIsKnown, layout)
        if full !== row { layoutIsKnown = false }
        defer { (layoutIsKnown, layout) = (known, knownLayout) }
        let task = try decode(CareTask.self, full)
        cache.insertContent(task)
        return task
    }

    /// The task whose version columns are `c`, when its content is in `cache` (nil when it is not): as
    /// ``task(_:cache:payloadRow:)`` gives it, read from a statement in place rather than a `Row`.
    func cachedTask(_ c: some StoredColumns, cache: TaskVersionCache) -> CareTask? {
        guard let uuid: UUID = c[.uuid], var task = cache.content(uuid) else { return nil }
        applyVersionColumns(c, to: &task.metadata)
        return task
    }

    func outcome(_ row: Row, values: [OutcomeValue]) throws -> Outcome {
        try outcome(NamedColumns(row: row, layout: columns(of: row)), values: values)
    }

    /// An outcome version from its columns (of a `Row`, or of a statement read in place).
    func outcome<Columns: StoredColumns>(_ c: Columns, values: [OutcomeValue]) throws -> Outcome {
        var outcome: Outcome
        if let payload: Data = c[.payload] {
            do {
                outcome = try decoder.decode(Outcome.self, from: payload)
            } catch {
                throw StoreError.database(message: "outcome row \(Self.rowID(c)) cannot be decoded: \(error)")
            }
        } else {
            guard let taskUUID: UUID = c[.taskUUID], let occurrence: Int = c[.occurrenceIndex] else {
                throw StoreError.database(message: "outcome row \(Self.rowID(c)) has no task uuid or occurrence")
            }
            outcome = Outcome(
                taskUUID: taskUUID, taskID: c[.taskID], taskOccurrenceIndex: occurrence, values: [],
                metadata: EntityMetadata(effectiveDate: Date(timeIntervalSince1970: 0), timezone: timeZone(c[.timezone])))
            if let sourceSystem: String = c[.sourceSystem], let fhirType: String = c[.fhirType], let fhirID: String = c[.fhirID] {
                outcome.provenance = Provenance(
                    sourceSystem: sourceSystem, fhirType: fhirType, fhirID: fhirID, versionID: c[.fhirVersionID],
                    lastUpdated: c.date(.fhirLastUpdated), contentHash: c[.contentHash])
            }
        }
        outcome.values = (inlineValue(c).map { [$0] } ?? []) + values
        if let source: String = c[.source] { outcome.metadata.source = source }
        applyVersionColumns(c, to: &outcome.metadata)
        return outcome
    }

    /// The row id in an error message ("?" when the columns have none).
    private static func rowID(_ c: some StoredColumns) -> String {
        (c[.rowID] as Int64?).map(String.init) ?? "?"
    }

    /// The first value of the outcome, kept in its row itself.
    private func inlineValue(_ c: some StoredColumns) -> OutcomeValue? {
        guard let type: String = c[.firstValueType] else { return nil }
        return Self.outcomeValue(
            type: type, stored: c[.firstValue] ?? .null, units: c[.firstValueUnits], kind: c[.firstValueKind],
            index: c[.firstValueIndex], createdDate: c.date(.firstValueCreatedDate),
            timezone: (c[.firstValueTimezone] as String?).map(timeZone))
    }

    /// Sets the version fields from the row's columns, which later versions keep up to date.
    private func applyVersionColumns(_ row: Row, to metadata: inout EntityMetadata) {
        applyVersionColumns(NamedColumns(row: row, layout: columns(of: row)), to: &metadata)
    }

    private func applyVersionColumns(_ c: some StoredColumns, to metadata: inout EntityMetadata) {
        if let uuid: UUID = c[.uuid] { metadata.uuid = uuid }
        metadata.effectiveDate = c.date(.effectiveDate) ?? metadata.effectiveDate
        metadata.deletedDate = c.date(.deletedDate)
        if let several: Data = c[.previousVersionUUIDs] {
            metadata.previousVersionUUIDs = Self.uuids(packed: several)
        } else {
            metadata.previousVersionUUIDs = (c[.previousVersionUUID] as UUID?).map { [$0] } ?? []
        }
        metadata.nextVersionUUIDs = (c[.nextVersionUUID] as UUID?).map { [$0] } ?? []
        metadata.createdDate = c.date(.createdDate)
        metadata.updatedDate = c.date(.updatedDate)
        // Payloads keep no content hash (it is their hash); an outcome's provenance, made from columns, has it.
        if let hash: String = c[.contentHash], metadata.provenance != nil { metadata.provenance?.contentHash = hash }
    }

    /// Uuids stored one after the other, 16 bytes each (an outcome's `previousVersionUUIDs`).
    static func packed(_ uuids: [UUID]) -> Data {
        var data = Data(capacity: uuids.count * 16)
        for uuid in uuids { withUnsafeBytes(of: uuid.uuid) { data.append(contentsOf: $0) } }
        return data
    }

    static func uuids(packed data: Data) -> [UUID] {
        data.withUnsafeBytes { bytes in
            stride(from: 0, to: bytes.count - 15, by: 16).map { UUID(uuid: bytes.loadUnaligned(fromByteOffset: $0, as: uuid_t.self)) }
        }
    }

    /// An outcome value from an `outcomeValue` row; `nil` when the row does not hold what its type says.
    static func outcomeValue(_ row: Row) -> OutcomeValue? {
        outcomeValue(row, timeZone: { identifier in TimeZone(identifier: identifier) })
    }

    /// An outcome value from an `outcomeValue` row, time zones looked up through `timeZone`.
    static func outcomeValue(_ row: Row, timeZone: (String) -> TimeZone?) -> OutcomeValue? {
        guard let type: String = row["type"] else { return nil }
        return outcomeValue(
            type: type, stored: row["value"], units: row["units"], kind: row["kind"], index: row["valueIndex"],
            createdDate: row.date("createdDate"), timezone: (row["timezone"] as String?).flatMap(timeZone))
    }

    /// An outcome value from its stored parts; `nil` when the value is not what its type says.
    static func outcomeValue(
        type: String, stored: DatabaseValue, units: String?, kind: String?, index: Int?, createdDate: Date?, timezone: TimeZone?
    ) -> OutcomeValue? {
        guard let valueType = OutcomeValue.ValueType(rawValue: type) else { return nil }
        let value: OutcomeValue.Value
        switch valueType {
        case .integer: guard let v = Int.fromDatabaseValue(stored) else { return nil }; value = .integer(v)
        case .double: guard let v = Double.fromDatabaseValue(stored) else { return nil }; value = .double(v)
        case .boolean: guard let v = Bool.fromDatabaseValue(stored) else { return nil }; value = .boolean(v)
        case .text: guard let v = String.fromDatabaseValue(stored) else { return nil }; value = .text(v)
        case .binary: guard let v = Data.fromDatabaseValue(stored) else { return nil }; value = .binary(v)
        case .date: guard let v = Double.fromDatabaseValue(stored) else { return nil }; value = .date(Date(storeSeconds: v))
        }
        return OutcomeValue(value, units: units, kind: kind, index: index, createdDate: createdDate, timezone: timezone ?? .gmt)
    }

    func timeZone(_ identifier: String?) -> TimeZone {
        let identifier = identifier ?? "UTC"
        if let zone = timeZones[identifier] { return zone }
        let zone = TimeZone(identifier: identifier) ?? TimeZone(secondsFromGMT: 0) ?? .current
        timeZones[identifier] = zone
        return zone
    }
}
