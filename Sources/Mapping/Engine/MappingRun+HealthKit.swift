import CareModel
import FHIR
import Foundation

/// HealthKit-linked tasks: a task entity whose `healthKitLinkage` field (the `healthKit` transform of its
/// codes) names a code of the HealthKit table becomes CareKit `healthKitTask`s instead of a plain task.
///
/// A linked task never shares a stable id with a plain one: CareKit links versions only within one
/// entity type, so a device that pulled the plain task could not take a linked version of it. Its id is
/// the plain task's with `.healthkit-<type>` after it (`CarePlan/cp-1#activity-29463-7.healthkit-BodyMass`):
/// when a mapping (or a table) starts linking an activity, the import tombstones the plain task the
/// resource no longer makes and starts the linked chain, and a device pulls both.
extension MappingRun {
    /// The suffix of a linked task's id, before the HealthKit type's short name.
    static let healthKitIDSuffix = ".healthkit-"

    /// The tasks `entity` makes of `item`: the task, or one linked task per HealthKit link its codes have
    /// (two for a blood pressure panel: systolic and diastolic); none without a schedule.
    mutating func tasks(_ entity: EntityMapping, item: FHIRPathElementNode, id: String) throws(MappingFailure) -> [CareTask] {
        guard let task = try task(entity, item: item, id: id) else { return [] }
        let links = try healthKitLinks(entity.field("healthKitLinkage"), item: item)
        guard !links.isEmpty else { return [task] }
        var linked: [CareTask] = []
        for link in links {
            linked.append(try hashed(Self.linking(task, to: link, oneOf: links.count)))
        }
        return linked
    }

    /// The table's links for the codes the `healthKit` transform of `field` reads; none without the field.
    func healthKitLinks(_ field: FieldMapping?, item: FHIRPathElementNode) throws(MappingFailure) -> [HealthKitMatch] {
        guard let field, case .transform(.healthKit, _, _) = field.source else { return [] }
        var seen: Set<String> = []
        let codes = try source(field, item: item).flatMap { ValueTransforms.codings($0.element) }.filter { seen.insert($0).inserted }
        return engine.mappings.healthKit.links(forCodes: codes)
    }

    /// `task` linked to `link`'s HealthKit type, under its own id. One of several (a panel's components):
    /// titled and coded by its component, the panel's codes after it.
    static func linking(_ task: CareTask, to link: HealthKitMatch, oneOf count: Int) -> CareTask {
        var linked = CareTask(
            id: task.id + healthKitIDSuffix + link.type.shortName, title: task.title, instructions: task.instructions,
            impactsAdherence: task.impactsAdherence, schedule: task.schedule, carePlanUUID: task.carePlanUUID,
            carePlanID: task.carePlanID, healthKitLinkage: link.linkage, metadata: task.metadata)
        // A version of its own: the tasks of one activity never share a version uuid.
        linked.metadata.uuid = VersionUUIDGenerator.random()
        if count > 1 {
            let component = link.code.display ?? link.code.code
            linked.title = task.title.map { "\($0): \(component)" } ?? component
            let own = HealthKitTable.loincSystem + "|" + link.code.code
            linked.metadata.linkage.codes = [own] + task.metadata.linkage.codes.filter { $0 != own }
        }
        return linked
    }
}
