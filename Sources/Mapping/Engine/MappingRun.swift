import CareModel
import FHIR
import Foundation

/// One resource being mapped.
struct MappingRun {
    let engine: MappingEngine
    let mapping: ResourceMapping
    let resource: Element
    let key: ResourceKey
    let index: ResourceIndex
    let tasks: (any TaskCatalog)?
    var environment: FHIRPathEnvironment
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
            now: engine.options.runDate, resolveReference: { reference, _ in index.element(for: reference) }, tracksPaths: true)
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
            if !entity.members.isEmpty {
                if let filter = entity.filter, !(try truth(filter, on: root)) { continue }
                entities += try careTeam(entity).map(CareEntity.contact)
                continue
            }
            let items = try entity.each.map { each throws(MappingFailure) in try nodes(each, on: root) } ?? [root]
            var usedKeys: Set<String> = []
            for (position, item) in items.enumerated() {
                if let filter = entity.filter, !(try truth(filter, on: item)) { continue }
                // An outcome has no id of its own: one is worked out only where its key could raise an error.
                let id = entity.kind == .outcome && entity.each == nil ? "" : try entityID(entity, item: item, position: position, used: &usedKeys)
                switch entity.kind {
                case .patient: entities.append(.patient(try patient(entity, item: item, id: id)))
                case .carePlan: entities.append(.carePlan(try carePlan(entity, item: item, id: id)))
                case .contact: entities.append(.contact(try contact(entity, item: item, id: id)))
                case .task: entities += try tasks(entity, item: item, id: id).map(CareEntity.task)
                case .outcome: if let contribution = try outcome(entity, item: item) { outcomes.append(contribution) }
                }
            }
        }
        return .mapped(entities: entities, outcomes: outcomes)
    }

    // MARK: - Identity

    func entityID(_ entity: EntityMapping, item: FHIRPathElementNode, position: Int, used: inout Set<String>) throws(MappingFailure) -> String {
        let base = options.entityID(key)
        guard entity.each != nil else {
            // A second top-level entity of the same resource is told apart by its name.
            return mapping.entities.first(where: { $0.each == nil })?.name == entity.name ? base : "\(base)#\(entity.name)"
        }
        var suffix = String(position + 1)
        if let keyExpression = entity.key, let text = try firstString(keyExpression, on: item), !text.isEmpty {
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

    mutating func patient(_ entity: EntityMapping, item: FHIRPathElementNode, id: String) throws(MappingFailure) -> Patient {
        var patient = Patient(id: id, name: try personName(entity.field("name"), item: item), metadata: metadata(effective: options.epoch))
        if let text = try string(entity.field("sex"), item: item) { patient.sex = BiologicalSex(rawValue: text) }
        patient.birthday = try date(entity.field("birthday"), item: item)
        let allergies = try stringList(entity.field("allergies"), item: item)
        patient.allergies = allergies.isEmpty ? nil : allergies
        try applyCommon(entity, item: item, to: &patient.metadata)
        return try hashed(patient)
    }

    mutating func carePlan(_ entity: EntityMapping, item: FHIRPathElementNode, id: String) throws(MappingFailure) -> CarePlan {
        guard let field = entity.field("patient"), let patientID = try references(field, item: item, expecting: "Patient").first else {
            throw MappingFailure(at: key.type, "a care plan needs its patient, and `\(entity.field("patient").map(describe) ?? "patient")` names none")
        }
        let title = try string(entity.field("title"), item: item) ?? "Care plan"
        var plan = CarePlan(id: id, title: title, patientID: patientID, metadata: metadata(effective: options.epoch))
        try applyCommon(entity, item: item, to: &plan.metadata)
        return try hashed(plan)
    }

    mutating func contact(_ entity: EntityMapping, item: FHIRPathElementNode, id: String) throws(MappingFailure) -> Contact {
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
        // The one patient the contact is someone of (a RelatedPerson's): a contact of no care plan
        // reaches that patient's devices through it.
        if let field = entity.field("patient"), let patient = try references(field, item: item, expecting: "Patient").first {
            contact.metadata.linkage.patientID = patient
        }
        try applyCommon(entity, item: item, to: &contact.metadata)
        return try hashed(contact)
    }

    mutating func task(_ entity: EntityMapping, item: FHIRPathElementNode, id: String) throws(MappingFailure) -> CareTask? {
        let targets = try values(entity.field("targetValues"), item: item, time: nil)
        var timing = TimingSchedule(timeZone: zone, wakingHours: options.wakingHours)
        var schedule: Schedule?
        if let field = entity.field("schedule"), case .transform(_, let from, let transformOptions) = field.source {
            if let hours = transformOptions.values["waking-hours"], let parsed = WakingHours(hours) {
                timing = TimingSchedule(timeZone: zone, wakingHours: parsed)
            }
            let value = try from.map { from throws(MappingFailure) in try nodes(from, on: item) }?.first
            if let coverage = engine.coverage, let path = value?.path { coverage.consumedWhole(path) }
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

    // MARK: - Metadata

    func metadata(effective: Date) -> EntityMetadata {
        EntityMetadata(effectiveDate: effective, timezone: zone, provenance: provenance())
    }

    func provenance() -> Provenance {
        let meta = resource.child(named: "meta")
        return Provenance(
            sourceSystem: options.sourceSystem, fhirType: key.type, fhirID: key.id, versionID: meta?.childValue("versionId"),
            lastUpdated: meta?.childValue("lastUpdated").flatMap { FHIRDateText.date($0, in: zone) })
    }

    mutating func applyCommon(_ entity: EntityMapping, item: FHIRPathElementNode, to metadata: inout EntityMetadata) throws(MappingFailure) {
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
    func hashed<Entity: StorableEntity & Encodable>(_ entity: Entity) throws(MappingFailure) -> Entity {
        // The hash is kept in the provenance: an entity without one (a log task) has nowhere to keep it.
        guard entity.metadata.provenance != nil else { return entity }
        var entity = entity
        do {
            let hash = try ContentJSON.hash(entity.careEntity)
            entity.metadata.provenance?.contentHash = hash
        } catch {
            throw MappingFailure(at: key.type, "cannot encode the \(entity.careEntity.kind.rawValue): \(error)")
        }
        return entity
    }
}
