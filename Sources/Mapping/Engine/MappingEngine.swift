import CareModel
import FHIR
import Foundation

/// Runs the mappings: one FHIR resource in, the care entities it makes (or why not) out, with notes on
/// what was assumed or not carried over. Pure: it reads the input's index and a task catalog, and
/// writes nothing.
///
/// ```swift
/// let engine = MappingEngine(mappings: try .defaults(), options: MappingOptions(timeZone: zone))
/// let mapped = engine.map(carePlan, key: key, index: index, tasks: catalog)
/// ```
public struct MappingEngine: Sendable {
    public let mappings: MappingSet
    public let options: MappingOptions
    /// Log tasks already built, by id: one per patient and code, built (and hashed) once per run.
    let logTasks = LogTaskCache()
    /// The reverse references of `reverse:` fields, each built once per input.
    let reverseIndexes = ReverseIndexCache()
    /// When set, learns which source elements the mappings read (`--coverage`).
    public let coverage: CoverageCollector?

    public init(mappings: MappingSet, options: MappingOptions, coverage: CoverageCollector? = nil) {
        self.mappings = mappings
        self.options = options
        self.coverage = coverage
    }

    /// Whether resources of `type` make outcomes (and so are mapped after everything else, streamed).
    public func makesOutcomes(_ type: String) -> Bool {
        mappings.mapping(for: type)?.entities.contains { $0.kind == .outcome } ?? false
    }

    /// Maps `resource`, known as `key`, resolving references in `index`.
    public func map(_ resource: Element, key: ResourceKey, index: ResourceIndex, tasks: (any TaskCatalog)? = nil) -> MappedResource {
        guard let mapping = mappings.mapping(for: key.type) else {
            return MappedResource(key: key, result: .skipped("no mapping for \(key.type)"), notes: [])
        }
        var run = Run(engine: self, mapping: mapping, resource: resource, key: key, index: index, tasks: tasks)
        do {
            let result = try run.map()
            return MappedResource(key: key, result: result, notes: run.notes)
        } catch {
            return MappedResource(key: key, result: .failed(error), notes: run.notes)
        }
    }
}

/// One resource being mapped.
private struct Run {
    let engine: MappingEngine
    let mapping: ResourceMapping
    let resource: Element
    let key: ResourceKey
    let index: ResourceIndex
    let tasks: (any TaskCatalog)?
    let environment: FHIRPathEnvironment
    let root: FHIRPathElementNode
    var notes: [MappingNote] = []

    var options: MappingOptions { engine.options }
    var zone: TimeZone { options.timeZone }

    init(engine: MappingEngine, mapping: ResourceMapping, resource: Element, key: ResourceKey, index: ResourceIndex, tasks: (any TaskCatalog)?) {
        self.engine = engine
        self.mapping = mapping
        self.resource = resource
        self.key = key
        self.index = index
        self.tasks = tasks
        var environment = FHIRPathEnvironment(
            now: Date(timeIntervalSince1970: 0), resolveReference: { reference, _ in index.element(for: reference) }, tracksPaths: true)
        if let coverage = engine.coverage {
            let type = key.type
            // Only elements of this resource count (not those of resources reached by resolve()).
            environment.observeSelection = { node in
                if let path = node.path, path.hasPrefix(type + ".") { coverage.selected(path) }
            }
        }
        self.environment = environment
        root = FHIRPathElementNode(resource: resource, path: key.type)
    }

    mutating func map() throws(MappingFailure) -> MappedResource.Result {
        if let filter = mapping.filter, !(try truth(filter, on: root)) {
            return .skipped("its mapping's `when` (\(filter.text)) is false")
        }
        if let deleteWhen = mapping.deleteWhen, try truth(deleteWhen, on: root) {
            return .delete
        }
        for rule in mapping.reports where try truth(rule.condition, on: root) {
            notes.append(MappingNote(.warning, at: key.type, rule.message))
        }
        var entities: [CareEntity] = []
        var outcomes: [OutcomeContribution] = []
        for entity in mapping.entities {
            let items = try entity.each.map { each throws(MappingFailure) in try nodes(each, on: root) } ?? [root]
            var usedKeys: Set<String> = []
            for (position, item) in items.enumerated() {
                if let filter = entity.filter, !(try truth(filter, on: item)) { continue }
                let id = try entityID(entity, item: item, position: position, used: &usedKeys)
                switch entity.kind {
                case .patient: entities.append(.patient(try patient(entity, item: item, id: id)))
                case .carePlan: entities.append(.carePlan(try carePlan(entity, item: item, id: id)))
                case .contact: entities.append(.contact(try contact(entity, item: item, id: id)))
                case .task: if let task = try task(entity, item: item, id: id) { entities.append(.task(task)) }
                case .outcome: if let contribution = try outcome(entity, item: item) { outcomes.append(contribution) }
                }
            }
        }
        return .mapped(entities: entities, outcomes: outcomes)
    }

    // MARK: - Identity

    private func entityID(_ entity: EntityMapping, item: FHIRPathElementNode, position: Int, used: inout Set<String>) throws(MappingFailure) -> String {
        let base = options.entityID(key)
        guard entity.each != nil else {
            // A second top-level entity of the same resource is told apart by its name.
            let others = mapping.entities.filter { $0.each == nil }
            return others.first?.name == entity.name ? base : "\(base)#\(entity.name)"
        }
        var suffix = String(position + 1)
        if let keyExpression = entity.key, let text = try strings(keyExpression, on: item).first, !text.isEmpty {
            suffix = ResourceKey.safe(text)
        }
        var candidate = suffix
        var repeatCount = 1
        while !used.insert(candidate).inserted {
            repeatCount += 1
            candidate = "\(suffix)-\(repeatCount)"
        }
        return "\(base)#\(entity.name)-\(candidate)"
    }

    // MARK: - Entities

    private mutating func patient(_ entity: EntityMapping, item: FHIRPathElementNode, id: String) throws(MappingFailure) -> Patient {
        var patient = Patient(id: id, name: try personName(entity.field("name"), item: item), metadata: metadata(effective: options.epoch))
        if let text = try string(entity.field("sex"), item: item) { patient.sex = BiologicalSex(rawValue: text) }
        patient.birthday = try date(entity.field("birthday"), item: item)
        let allergies = try stringList(entity.field("allergies"), item: item)
        patient.allergies = allergies.isEmpty ? nil : allergies
        try applyCommon(entity, item: item, to: &patient.metadata)
        return try hashed(patient)
    }

    private mutating func carePlan(_ entity: EntityMapping, item: FHIRPathElementNode, id: String) throws(MappingFailure) -> CarePlan {
        guard let field = entity.field("patient"), let patientID = try references(field, item: item, expecting: "Patient").first else {
            throw MappingFailure(at: key.type, "a care plan needs its patient, and `\(entity.field("patient").map(describe) ?? "patient")` names none")
        }
        let title = try string(entity.field("title"), item: item) ?? "Care plan"
        var plan = CarePlan(id: id, title: title, patientID: patientID, metadata: metadata(effective: options.epoch))
        try applyCommon(entity, item: item, to: &plan.metadata)
        return try hashed(plan)
    }

    private mutating func contact(_ entity: EntityMapping, item: FHIRPathElementNode, id: String) throws(MappingFailure) -> Contact {
        var contact = Contact(id: id, name: try personName(entity.field("name"), item: item), metadata: metadata(effective: options.epoch))
        if let field = entity.field("address") {
            contact.address = PersonTransforms.postalAddress(try source(field, item: item), notes: &notes)
        }
        if let field = entity.field("telecom") {
            let telecom = PersonTransforms.telecom(try source(field, item: item))
            contact.phoneNumbers = telecom.phoneNumbers.isEmpty ? nil : telecom.phoneNumbers
            contact.messagingNumbers = telecom.messagingNumbers.isEmpty ? nil : telecom.messagingNumbers
            contact.emailAddresses = telecom.emailAddresses.isEmpty ? nil : telecom.emailAddresses
            contact.otherContactInfo = telecom.otherContactInfo.isEmpty ? nil : telecom.otherContactInfo
        }
        contact.organization = try string(entity.field("organization"), item: item)
        contact.title = try string(entity.field("title"), item: item)
        contact.role = try string(entity.field("role"), item: item)
        if let text = try string(entity.field("category"), item: item) {
            guard let category = ContactCategory(rawValue: text) else {
                throw MappingFailure(at: key.type, "'\(text)' is not a contact category (careProvider or friendsAndFamily)")
            }
            contact.category = category
        }
        var plans: [String] = []
        if let field = entity.field("carePlan") { plans += try references(field, item: item, expecting: "CarePlan") }
        if let field = entity.field("carePlans") { plans += try references(field, item: item, expecting: "CarePlan") }
        contact.carePlanID = plans.first
        if plans.count > 1 {
            notes.append(MappingNote(.info, at: key.type, "on \(plans.count) care plans; CareKit links a contact to one: kept on \(plans[0])"))
        }
        try applyCommon(entity, item: item, to: &contact.metadata)
        return try hashed(contact)
    }

    private mutating func task(_ entity: EntityMapping, item: FHIRPathElementNode, id: String) throws(MappingFailure) -> CareTask? {
        let targets = try values(entity.field("targetValues"), item: item, time: nil)
        var timing = TimingSchedule(timeZone: zone, wakingHours: options.wakingHours)
        var schedule: Schedule?
        if let field = entity.field("schedule"), case .transform(_, let from, let transformOptions) = field.source {
            if let hours = transformOptions.values["waking-hours"], let parsed = WakingHours(hours) {
                timing = TimingSchedule(timeZone: zone, wakingHours: parsed)
            }
            let value = try from.map { from throws(MappingFailure) in try nodes(from, on: item) }?.first
            if let path = value?.path { engine.coverage?.consumedWhole(path) }
            let start = try transformOptions.expressions["start"].flatMap { expression throws(MappingFailure) in
                try dateValue(expression, on: item)
            }
            // The end of a Period: a date without a time includes its whole day.
            let end = try transformOptions.expressions["end"].flatMap { expression throws(MappingFailure) in
                try dateValue(expression, on: item, endingPeriod: true)
            }
            let rule = transformOptions.values["default"].flatMap(TimingSchedule.DefaultRule.init) ?? .dailyAllDay
            let path = item.path.map { "\($0).\(from?.text ?? "timing")" } ?? key.type
            schedule = try timing.schedule(value, start: start, end: end, defaultRule: rule, targets: targets, path: path)
            notes += timing.notes
        } else {
            schedule = try timing.schedule(nil, start: nil, end: nil, defaultRule: .dailyAllDay, targets: targets, path: item.path ?? key.type)
            notes += timing.notes
        }
        guard let schedule else {
            notes.append(MappingNote(.info, at: item.path ?? key.type, "no schedule: no task made"))
            return nil
        }
        var task = CareTask(
            id: id, title: try string(entity.field("title"), item: item), instructions: try string(entity.field("instructions"), item: item),
            impactsAdherence: try boolean(entity.field("impactsAdherence"), item: item) ?? true, schedule: schedule,
            metadata: metadata(effective: schedule.startDate))
        if let field = entity.field("carePlan") { task.carePlanID = try references(field, item: item, expecting: "CarePlan").first }
        var linkage = task.metadata.linkage
        if let field = entity.field("patient"), let patient = try references(field, item: item, expecting: "Patient").first {
            linkage.patientID = patient
        }
        linkage.codes = try codings(entity.field("codes"), item: item)
        if let path = item.path, path.utf8.contains(UInt8(ascii: ".")) { linkage.elementPath = path }
        try applyCommon(entity, item: item, to: &task.metadata)
        // The Observations this activity says are its outcomes, kept on the task, so that the importer
        // finds their task whichever import brings them.
        for reference in item.element.children(named: "outcomeReference").compactMap({ $0.childValue("reference") }) {
            switch index.resolve(reference) {
            case .found(let observation), .outside(let observation): linkage.outcomeReferences.append(observation)
            case .unresolved: break
            }
        }
        task.metadata.linkage = linkage
        return try hashed(task)
    }

    private mutating func outcome(_ entity: EntityMapping, item: FHIRPathElementNode) throws(MappingFailure) -> OutcomeContribution? {
        guard let patientField = entity.field("patient"), let patientID = try references(patientField, item: item, expecting: "Patient").first else {
            throw MappingFailure(at: "\(key.type).subject", "the Observation names no patient")
        }
        guard let time = try date(entity.field("time"), item: item) else {
            throw MappingFailure(at: "\(key.type).effective", "the Observation has no time (effective[x] or issued)")
        }
        let values = try self.values(entity.field("values"), item: item, time: time)
        guard !values.isEmpty else {
            notes.append(MappingNote(.warning, at: key.type, "no value to carry over"))
            return nil
        }
        let codes = try codings(entity.field("codes"), item: item)
        let provenance = provenance()
        // 1. The plan or order it is based on or part of.
        var candidates: [CareTask] = []
        if let field = entity.field("task") {
            for target in try referenceKeys(field, item: item) {
                let made = tasks?.tasks(madeFrom: target) ?? []
                var matching = made.filter { !Set(taskCodes($0)).isDisjoint(with: codes) }
                // Codes that decide nothing: the concept's text names the task (as export writes it).
                if matching.isEmpty, made.count > 1, let text = try string(entity.field("logTitle"), item: item) {
                    matching = made.filter { $0.title == text }
                }
                candidates += matching.isEmpty && made.count == 1 ? made : matching
            }
        }
        // 2. The activity whose outcomeReference names it.
        if let id = tasks?.taskForOutcome(key), let task = tasks?.task(id: id) { candidates.append(task) }
        // 3. A task of the same patient with the same code.
        if candidates.isEmpty, !codes.isEmpty {
            candidates = tasks?.tasks(ofPatient: patientID, withAnyCode: codes) ?? []
        }
        for task in candidates {
            if let occurrence = Self.occurrence(of: task.schedule, at: time) {
                return OutcomeContribution(taskID: task.id, occurrence: occurrence, values: values, source: key, logTask: nil, provenance: provenance)
            }
        }
        if !candidates.isEmpty {
            notes.append(MappingNote(.info, at: key.type, "its time falls outside the schedule of task \(candidates[0].id): logged instead"))
        }
        // 4. A log: one all-day task per patient and code, each measurement a value of that day's outcome.
        // One log per code; an Observation coded by text only is logged under its text.
        let logTitle = try string(entity.field("logTitle"), item: item)
        let codeKey = codes.first ?? logTitle ?? "uncoded"
        let logID = "\(patientID)#log-\(ResourceKey.safe(codeKey))"
        // Each Observation offers the log titled its own way; the importer keeps the one offered first in
        // input order, so that the title does not depend on which Observation a worker thread maps first.
        let title = logTitle ?? codeKey
        let log: CareTask
        if let known = engine.logTasks["\(logID)\n\(title)"] {
            log = known
        } else {
            let schedule: Schedule
            do {
                schedule = try Schedule(composing: [ScheduleElement(
                    start: options.epoch, end: nil, interval: DateComponents(day: 1), duration: .allDay, timeZone: zone)])
            } catch {
                throw MappingFailure(at: key.type, "cannot make the log schedule: \(error)")
            }
            var made = CareTask(id: logID, title: title, impactsAdherence: false, schedule: schedule, metadata: EntityMetadata(effectiveDate: options.epoch, timezone: zone))
            var linkage = FHIRLinkage()
            linkage.patientID = patientID
            linkage.codes = [codeKey]
            made.metadata.linkage = linkage
            made.metadata.tags = ["log"]
            log = try hashed(made)
            engine.logTasks["\(logID)\n\(title)"] = log
        }
        guard time < Schedule.horizon else {
            throw MappingFailure(at: "\(key.type).effective", "its time \(TimingSchedule.isoDay(time, zone)) is after \(TimingSchedule.isoDay(Schedule.horizon, zone)), the last day a schedule reaches: is the date right?")
        }
        guard let occurrence = FHIRDates.dayIndex(of: time, from: options.epoch, in: zone) else {
            throw MappingFailure(at: "\(key.type).effective", "its time is before \(TimingSchedule.isoDay(options.epoch, zone)), the start of every log")
        }
        return OutcomeContribution(taskID: logID, occurrence: occurrence, values: values, source: key, logTask: log, provenance: provenance)
    }

    /// The occurrence of `schedule` that `time` belongs to: the last event starting at or before it,
    /// provided the event has not ended more than a day before.
    static func occurrence(of schedule: Schedule, at time: Date) -> Int? {
        schedule.occurrence(at: time)
    }

    private func taskCodes(_ task: CareTask) -> [String] {
        task.metadata.linkage.codes
    }

    // MARK: - Metadata

    private func metadata(effective: Date) -> EntityMetadata {
        EntityMetadata(effectiveDate: effective, timezone: zone, provenance: provenance())
    }

    private func provenance() -> Provenance {
        let meta = resource.child(named: "meta")
        return Provenance(
            sourceSystem: options.sourceSystem, fhirType: key.type, fhirID: key.id, versionID: meta?.childValue("versionId"),
            lastUpdated: meta?.childValue("lastUpdated").flatMap { FHIRDateText.date($0, in: zone) })
    }

    private mutating func applyCommon(_ entity: EntityMapping, item: FHIRPathElementNode, to metadata: inout EntityMetadata) throws(MappingFailure) {
        var info = metadata.userInfo ?? [:]
        for field in entity.fields {
            switch field.target {
            case "tags":
                let tags = try stringList(field, item: item)
                if !tags.isEmpty { metadata.tags = (metadata.tags ?? []) + tags }
            case "notes":
                let texts = try stringList(field, item: item)
                if !texts.isEmpty { metadata.notes = texts.map { Note(author: nil, title: nil, content: $0) } }
            case "groupIdentifier": metadata.groupIdentifier = try string(field, item: item)
            case "remoteID": metadata.remoteID = try string(field, item: item)
            case "asset": metadata.asset = try string(field, item: item)
            default:
                if field.target.hasPrefix("userInfo.") {
                    let name = String(field.target.dropFirst("userInfo.".count))
                    let texts = try stringList(field, item: item)
                    if !texts.isEmpty { info[name] = texts.joined(separator: "\n") }
                }
            }
        }
        metadata.userInfo = info.isEmpty ? nil : info
    }

    /// The entity with its provenance content hash set (``ContentJSON``): the SHA-256 of its CareKit JSON
    /// without the version header, so that the store tells "same content again" from a change.
    private func hashed<Entity: StorableEntity & Encodable>(_ entity: Entity) throws(MappingFailure) -> Entity {
        var entity = entity
        do {
            let hash = try ContentJSON.hash(entity.careEntity)
            entity.metadata.provenance?.contentHash = hash
        } catch {
            throw MappingFailure(at: key.type, "cannot encode the \(entity.careEntity.kind.rawValue): \(error)")
        }
        return entity
    }

    // MARK: - Field values

    private func describe(_ field: FieldMapping) -> String {
        switch field.source {
        case .expression(let expression): return expression.text
        case .transform(let name, let from, _): return "\(name.rawValue)(\(from?.text ?? ""))"
        case .literal(let value): return value
        case .reverse(let type, _, _): return "reverse \(type)"
        }
    }

    /// The raw items a field's source selects (for transforms: what `from` selects).
    private func source(_ field: FieldMapping, item: FHIRPathElementNode) throws(MappingFailure) -> [FHIRPathElementNode] {
        switch field.source {
        case .expression(let expression):
            // What a field selects is used whole (a reference's parts, a concept's codings).
            let selected = try nodes(expression, on: item)
            if let coverage = engine.coverage {
                for node in selected { if let path = node.path { coverage.consumedWhole(path) } }
            }
            return selected
        case .transform(_, let from, _):
            let selected = try from.map { from throws(MappingFailure) in try nodes(from, on: item) } ?? [item]
            if let coverage = engine.coverage {
                for node in selected { if let path = node.path { coverage.consumedWhole(path) } }
            }
            return selected
        case .literal: return []
        case .reverse(let type, let on, let value):
            var result: [FHIRPathElementNode] = []
            for other in try reverseResources(type: type, on: on) {
                result += try nodes(value, on: FHIRPathElementNode(resource: other.element, path: other.key.type), resource: other.element)
            }
            return result
        }
    }

    /// The resources of `type` in the input whose `on` references name this resource: a lookup in an
    /// index of those references, built on first use for the whole input (never a scan per resource).
    private func reverseResources(type: String, on: MappingExpression) throws(MappingFailure) -> [(key: ResourceKey, element: Element)] {
        let cacheKey = "\(type)|\(on.location)|\(on.text)"
        let referrers: [ResourceKey: [ResourceKey]]
        if let known = engine.reverseIndexes.lookup(cacheKey, in: index) {
            referrers = known
        } else {
            var built: [ResourceKey: [ResourceKey]] = [:]
            for otherKey in index.keys(ofType: type) {
                guard let other = index.resource(otherKey) else { continue }
                var targets: Set<ResourceKey> = []
                for reference in try evaluate(on, on: FHIRPathElementNode(resource: other, path: type), resource: other) {
                    if let text = Self.referenceText(reference), case .found(let target) = index.resolve(text), targets.insert(target).inserted {
                        built[target, default: []].append(otherKey)
                    }
                }
            }
            engine.reverseIndexes.store(built, for: cacheKey, in: index)
            referrers = built
        }
        return (referrers[key] ?? []).compactMap { otherKey in index.resource(otherKey).map { (otherKey, $0) } }
    }

    private mutating func personName(_ field: FieldMapping?, item: FHIRPathElementNode) throws(MappingFailure) -> PersonName {
        guard let field else { return PersonName() }
        return PersonTransforms.personName(try source(field, item: item).filter { $0.typeName == "HumanName" }, notes: &notes)
    }

    private mutating func values(_ field: FieldMapping?, item: FHIRPathElementNode, time: Date?) throws(MappingFailure) -> [OutcomeValue] {
        guard let field, case .transform(let transform, _, let transformOptions) = field.source else { return [] }
        let kind = transformOptions.values["kind"]
        var result: [OutcomeValue] = []
        for node in try source(field, item: item) {
            switch transform {
            case .observationValues: result += ValueTransforms.observationValues(node, time: time, zone: zone, notes: &notes)
            default:
                // Targets and doses: a Goal gives its targets, a quantity (or range, or number) itself.
                if node.typeName == "Goal" || node.typeName == "Goal.target" {
                    result += ValueTransforms.goalTargets(node, zone: zone, notes: &notes)
                } else {
                    result += ValueTransforms.quantity(node, kind: kind, time: time, zone: zone, notes: &notes)
                }
            }
        }
        return result
    }

    private func codings(_ field: FieldMapping?, item: FHIRPathElementNode) throws(MappingFailure) -> [String] {
        guard let field else { return [] }
        var seen: Set<String> = []
        return try source(field, item: item).flatMap { ValueTransforms.codings($0.element) }.filter { seen.insert($0).inserted }
    }

    private func string(_ field: FieldMapping?, item: FHIRPathElementNode) throws(MappingFailure) -> String? {
        try stringList(field, item: item).first
    }

    private func stringList(_ field: FieldMapping?, item: FHIRPathElementNode) throws(MappingFailure) -> [String] {
        guard let field else { return [] }
        switch field.source {
        case .literal(let value): return [value]
        case .transform(.codeableConcept, _, _):
            return try source(field, item: item).compactMap { PersonTransforms.conceptText($0.element) }
        case .expression(let expression):
            return try strings(expression, on: item)
        case .reverse(_, _, let value):
            return try source(field, item: item).map { node throws(MappingFailure) in
                guard let text = node.element.value ?? PersonTransforms.conceptText(node.element) else {
                    throw MappingFailure(at: node.path ?? key.type, "`\(value.text)` (\(value.location)) gives a \(node.typeName ?? "element"), not text")
                }
                return text
            }
        case .transform:
            return []
        }
    }

    private func boolean(_ field: FieldMapping?, item: FHIRPathElementNode) throws(MappingFailure) -> Bool? {
        guard let text = try string(field, item: item) else { return nil }
        guard text == "true" || text == "false" else {
            throw MappingFailure(at: key.type, "'\(field.map(describe) ?? "")' gives '\(text)', not true or false (\(field?.location.description ?? ""))")
        }
        return text == "true"
    }

    private func date(_ field: FieldMapping?, item: FHIRPathElementNode) throws(MappingFailure) -> Date? {
        guard let field, case .expression(let expression) = field.source else { return nil }
        return try dateValue(expression, on: item)
    }

    /// The date `expression` gives; with `endingPeriod`, read as a Period's end (see ``FHIRDates/periodEnd(_:in:)``).
    private func dateValue(_ expression: MappingExpression, on item: FHIRPathElementNode, endingPeriod: Bool = false) throws(MappingFailure) -> Date? {
        guard let text = try strings(expression, on: item).first else { return nil }
        guard let date = endingPeriod ? FHIRDates.periodEnd(text, in: zone) : FHIRDateText.date(text, in: zone) else {
            throw MappingFailure(at: key.type, "`\(expression.text)` (\(expression.location)) gives '\(text)', not a date")
        }
        return date
    }

    /// The entity ids of the resources `field` references, which must be of type `expecting`.
    private func references(_ field: FieldMapping, item: FHIRPathElementNode, expecting type: String) throws(MappingFailure) -> [String] {
        try referenceKeys(field, item: item).map { target throws(MappingFailure) in
            guard target.type == type else {
                throw MappingFailure(at: key.type, "`\(describe(field))` names a \(target.type) (\(target)), not a \(type)")
            }
            return options.entityID(target)
        }
    }

    /// The keys of the resources `field` references: in the input, or (for `Type/id`) possibly in the store.
    private func referenceKeys(_ field: FieldMapping, item: FHIRPathElementNode) throws(MappingFailure) -> [ResourceKey] {
        var keys: [ResourceKey] = []
        for node in try source(field, item: item) {
            if node.element.resourceType != nil, let found = ResourceKey.of(node.element, fullUrl: nil) {
                keys.append(found)
                continue
            }
            guard let text = node.element.childValue("reference") ?? node.element.value else {
                continue  // a Reference with only a display or identifier: nothing to follow
            }
            if text.hasPrefix("#") { continue }
            switch index.resolve(text) {
            case .found(let found), .outside(let found): keys.append(found)
            case .unresolved(let reason):
                throw MappingFailure(at: node.path ?? key.type, "the reference '\(text)' resolves nowhere: \(reason)")
            }
        }
        return keys
    }

    // MARK: - Evaluation

    private func truth(_ expression: MappingExpression, on item: FHIRPathElementNode) throws(MappingFailure) -> Bool {
        let result = try evaluate(expression, on: item)
        guard let first = result.first else { return false }
        switch first {
        case .boolean(let value): return value
        case .element(let node) where node.typeName == "boolean": return node.element.value == "true"
        default: return true
        }
    }

    private func nodes(_ expression: MappingExpression, on item: FHIRPathElementNode, resource: Element? = nil) throws(MappingFailure) -> [FHIRPathElementNode] {
        try evaluate(expression, on: item, resource: resource).compactMap { value in
            switch value {
            case .element(let node): return node
            case .string(let text): return FHIRPathElementNode(element: Element(name: "value", value: text), typeName: "string", context: nil, path: nil)
            default: return FHIRPathElementNode(element: Element(name: "value", value: value.description), typeName: value.typeName, context: nil, path: nil)
            }
        }
    }

    private func strings(_ expression: MappingExpression, on item: FHIRPathElementNode) throws(MappingFailure) -> [String] {
        try evaluate(expression, on: item).map { value throws(MappingFailure) in
            switch value {
            case .element(let node):
                guard let text = node.element.value else {
                    throw MappingFailure(
                        at: node.path ?? key.type,
                        "`\(expression.text)` (\(expression.location)) gives a \(node.typeName ?? "complex element"), not text")
                }
                return text
            case .string(let text): return text
            case .date(let value), .dateTime(let value): return value.description
            default: return value.description
            }
        }
    }

    private func evaluate(_ expression: MappingExpression, on item: FHIRPathElementNode, resource: Element? = nil) throws(MappingFailure) -> [FHIRPathValue] {
        do {
            let owner = resource ?? self.resource
            return try expression.compiled.evaluate(context: [.element(item)], resource: owner, rootResource: owner, environment: environment)
        } catch {
            throw MappingFailure(at: item.path ?? key.type, "mapping \(expression.location): `\(expression.text)`: \(error.message)")
        }
    }

    private static func referenceText(_ value: FHIRPathValue) -> String? {
        switch value {
        case .element(let node): return node.element.childValue("reference") ?? node.element.value
        case .string(let text): return text
        default: return nil
        }
    }
}

/// The log tasks of a run by id and title, built (and hashed) once, shared by every mapping of it (the
/// engine is a value; this is its one cache).
final class LogTaskCache: @unchecked Sendable {
    private var tasks: [String: CareTask] = [:]
    private let lock = NSLock()

    subscript(id: String) -> CareTask? {
        get { lock.withLock { tasks[id] } }
        set { lock.withLock { tasks[id] = newValue } }
    }
}

/// The reverse references of a run's `reverse:` fields: for one resource type and `on` expression, the
/// resources each target is named by, in input order. Kept with the index they were built from, so
/// that a new input never reads another's. The index is held weakly: the engine outlives an import, and
/// must not keep its input (every resource the index holds) alive after it.
final class ReverseIndexCache: @unchecked Sendable {
    private struct Entry {
        weak var index: ResourceIndex?
        let referrers: [ResourceKey: [ResourceKey]]
    }

    private var built: [String: Entry] = [:]
    private let lock = NSLock()

    func lookup(_ key: String, in index: ResourceIndex) -> [ResourceKey: [ResourceKey]]? {
        lock.withLock { built[key].flatMap { $0.index === index ? $0.referrers : nil } }
    }

    func store(_ referrers: [ResourceKey: [ResourceKey]], for key: String, in index: ResourceIndex) {
        lock.withLock {
            built = built.filter { $0.value.index != nil }  // entries of inputs already gone
            built[key] = Entry(index: index, referrers: referrers)
        }
    }
}
