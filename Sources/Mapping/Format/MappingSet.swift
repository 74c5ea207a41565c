import CareModel
import Foundation
import Yams

/// The mappings in force for a run, by resource type: the defaults that ship with CareGate (embedded
/// in the binary, generated from Mappings/), with a user's folder layered over them.
///
/// A user file for a type replaces the default for that type, unless it says `extends: default`: then
/// its entities extend the default's (fields of an entity with the same `name:` are added or replaced;
/// new entities are added; `when`, `delete-when` and `each` replace the default's when given; report
/// rules are added).
public struct MappingSet: Sendable {
    public private(set) var byType: [String: ResourceMapping]
    /// How outcomes become Observations (the file with `export: outcome`); a user's replaces the default.
    public private(set) var export: ExportMapping?
    /// What ResearchKit active tasks' results become (the file with `export: active-task`); a user's
    /// replaces the default.
    public private(set) var activeTasks: ActiveTaskMapping?
    /// The LOINC <-> HealthKit table (the file with `healthkit:`, Mappings/healthkit.yaml by default); a
    /// user's replaces the default. Empty when no file gives one: then no task links.
    public private(set) var healthKit: HealthKitTable

    public init(
        _ mappings: [ResourceMapping], export: ExportMapping? = nil, activeTasks: ActiveTaskMapping? = nil,
        healthKit: HealthKitTable = .empty
    ) {
        byType = Dictionary(mappings.map { ($0.resourceType, $0) }, uniquingKeysWith: { _, last in last })
        self.export = export
        self.activeTasks = activeTasks
        self.healthKit = healthKit
    }

    /// The mapping of `resourceType`, if any.
    public func mapping(for resourceType: String) -> ResourceMapping? { byType[resourceType] }

    /// The resource types mapped, sorted.
    public var resourceTypes: [String] { byType.keys.sorted() }

    /// The defaults shipped with CareGate, checked.
    ///
    /// - Throws: ``MappingProblems`` if the embedded files are broken (a build that should not pass its tests).
    ///
    /// Parsed and checked once a process: the files are embedded, so every job of a process (each sync
    /// run of a server, each import of a benchmark) would otherwise parse the same YAML again, which
    /// costs about as much as parsing a few hundred FHIR resources.
    public static func defaults() throws -> MappingSet {
        try checkedDefaults.get()
    }

    private static let checkedDefaults: Result<MappingSet, MappingProblems> = {
        let files = DefaultMappings.files.map { (name: "Mappings/" + $0.name, text: $0.text) }
        let (set, problems) = load(files: files)
        if problems.contains(where: { $0.severity == .error }) { return .failure(MappingProblems(problems)) }
        return .success(set)
    }()

    /// The names of the default mapping files.
    public static var defaultFileNames: [String] { DefaultMappings.files.map(\.name).filter { $0 != "insights.yaml" } }

    /// The text of the default file `name` (`insights.yaml`: the report's rules, read by the Insights module).
    public static func defaultFileText(named name: String) -> String? { DefaultMappings.files.first { $0.name == name }?.text }

    /// Every problem of the default mappings (none in a sound build).
    public static func checkDefaults() -> [MappingProblem] {
        load(files: DefaultMappings.files.map { (name: "Mappings/" + $0.name, text: $0.text) }).1
    }

    /// The defaults with the `.yaml` files of `folder` layered over them.
    ///
    /// - Throws: ``MappingProblems`` listing every error (file:line:column) of the user's files.
    public static func defaults(overriddenBy folder: String?) throws -> MappingSet {
        guard let folder else { return try defaults() }
        let layered = try self.layered(folder: folder)
        if layered.problems.contains(where: { $0.severity == .error }) { throw MappingProblems(layered.problems) }
        return layered.set
    }

    /// The defaults with the files of `folder` layered over them, and every problem of those files
    /// (an `extends: default` file checked merged with the default it extends), without throwing on
    /// them: what `caregate mappings validate DIR` reports.
    ///
    /// - Throws: ``MappingProblems`` when the folder cannot be read or the defaults are broken.
    public static func layered(folder: String) throws -> (set: MappingSet, problems: [MappingProblem], fileCount: Int) {
        var set = try defaults()
        let user = try loadChecked(folder: folder)
        var problems = user.problems
        set.layer(user.set)
        let base = set
        set.layer(user.extending)
        // Each extension is checked merged with what it extends, and only its own file counts as
        // written by the author: what it breaks in the default's fields is reported at its lines.
        for extended in user.extending + user.unusableExtending {
            let merged = base.mapping(for: extended.resourceType).map { $0.extended(by: extended) } ?? extended
            problems += MappingChecker.check(merged, authoredIn: [extended.file])
        }
        return (set, problems, user.fileCount)
    }

    /// Reads, parses and checks every `.yaml`/`.yml` file of `folder` (name order).
    ///
    /// - Returns: the mappings and every problem found (errors and warnings).
    /// - Throws: ``MappingProblems`` when the folder cannot be read.
    public static func load(folder: String) throws -> (set: MappingSet, extending: [ResourceMapping], problems: [MappingProblem], fileCount: Int) {
        let loaded = try loadChecked(folder: folder)
        return (loaded.set, loaded.extending, loaded.problems, loaded.fileCount)
    }

    /// ``load(folder:)``, with the `extends: default` files that have errors of their own as well: not
    /// fit to be used, but still to be checked merged with what they extend.
    static func loadChecked(folder: String) throws -> (
        set: MappingSet, extending: [ResourceMapping], unusableExtending: [ResourceMapping], problems: [MappingProblem], fileCount: Int
    ) {
        let url = URL(fileURLWithPath: folder)
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: folder)
                .filter { $0.hasSuffix(".yaml") || $0.hasSuffix(".yml") }.sorted()
        } catch {
            throw MappingProblems([MappingProblem(at: MappingLocation(file: folder, line: 1, column: 1), "cannot read the mapping folder: \(error.localizedDescription)")])
        }
        var files: [(name: String, text: String)] = []
        var problems: [MappingProblem] = []
        for name in names {
            let path = url.appendingPathComponent(name).path
            let display = (folder.hasSuffix("/") ? folder : folder + "/") + name
            guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
                problems.append(MappingProblem(at: MappingLocation(file: display, line: 1, column: 1), "cannot be read as UTF-8 text"))
                continue
            }
            files.append((display, text))
        }
        if names.isEmpty {
            problems.append(MappingProblem(.warning, at: MappingLocation(file: folder, line: 1, column: 1), "no .yaml mapping file in this folder"))
        }
        let loaded = loadWithExtensions(files: files)
        return (loaded.set, loaded.extending, loaded.unusableExtending, problems + loaded.problems, names.count)
    }

    public static func load(files: [(name: String, text: String)]) -> (MappingSet, [MappingProblem]) {
        let loaded = loadWithExtensions(files: files)
        var result = loaded.set
        result.layer(loaded.extending)
        return (result, loaded.problems)
    }

    /// Reads and checks `files`: the mappings fit to be used, those that extend a default (checked only
    /// once merged with it), those that extend one but have errors of their own, and every problem.
    private static func loadWithExtensions(files: [(name: String, text: String)]) -> (
        set: MappingSet, problems: [MappingProblem], extending: [ResourceMapping], unusableExtending: [ResourceMapping]
    ) {
        var mappings: [ResourceMapping] = []
        var extending: [ResourceMapping] = []
        var unusableExtending: [ResourceMapping] = []
        var problems: [MappingProblem] = []
        var seen: [String: String] = [:]
        var export: ExportMapping?
        var activeTasks: ActiveTaskMapping?
        var healthKit: HealthKitTable?
        for file in files {
            let root = try? Yams.compose(yaml: file.text)
            // The care-team report's rules (insights.yaml, marked by `insights:`) are no resource mapping:
            // the Insights module reads and checks them.
            if let root, root.mapping?.keys.contains(where: { $0.string == "insights" }) == true { continue }
            if let root, ActiveTaskMappingParser.isActiveTaskMapping(root) {
                var parser = ActiveTaskMappingParser(file: file.name)
                keep(parser.parse(root), in: &activeTasks, from: file.name, file: \.file, twice: "active tasks are already mapped by")
                problems += parser.problems
                continue
            }
            // The LOINC <-> HealthKit table (healthkit.yaml, marked by `healthkit:`).
            if let root, HealthKitTableParser.isTable(root) {
                var parser = HealthKitTableParser(file: file.name)
                let parsed = parser.parse(root)
                problems += parser.problems
                if let earlier = healthKit, parsed != nil {
                    problems.append(MappingProblem(at: MappingLocation(file: file.name, line: 1, column: 1), "the HealthKit table is already given by \(earlier.file)"))
                }
                healthKit = parsed ?? healthKit
                continue
            }
            if let root, ExportMappingParser.isExportMapping(root) {
                var parser = ExportMappingParser(file: file.name)
                keep(parser.parse(root), in: &export, from: file.name, file: \.file, twice: "outcomes are already exported by")
                problems += parser.problems
                continue
            }
            var parser = MappingParser(file: file.name)
            let parsed = parser.parse(file.text)
            problems += parser.problems
            guard let mapping = parsed else { continue }
            if parser.extendsDefault {
                if parser.hasErrors { unusableExtending.append(mapping) } else { extending.append(mapping) }
                continue
            }
            let checks = MappingChecker.check(mapping)
            problems += checks
            if let earlier = seen[mapping.resourceType] {
                problems.append(MappingProblem(
                    at: MappingLocation(file: file.name, line: 1, column: 1), "\(mapping.resourceType) is already mapped by \(earlier)"))
            }
            seen[mapping.resourceType] = file.name
            if !parser.hasErrors, !checks.contains(where: { $0.severity == .error }) { mappings.append(mapping) }
        }
        return (MappingSet(mappings, export: export, activeTasks: activeTasks, healthKit: healthKit ?? .empty), problems, extending, unusableExtending)

        /// A mapping a set holds one of (the export mapping, the active-task mapping): the parsed one
        /// replaces the earlier, and a second one among the files is reported.
        func keep<Parsed>(_ parsed: Parsed?, in kept: inout Parsed?, from name: String, file: KeyPath<Parsed, String>, twice: String) {
            guard let parsed else { return }
            if let earlier = kept {
                problems.append(MappingProblem(at: MappingLocation(file: name, line: 1, column: 1), "\(twice) \(earlier[keyPath: file])"))
            }
            kept = parsed
        }
    }

    /// Layers `extensions` (files with `extends: default`) over this set.
    mutating func layer(_ extensions: [ResourceMapping]) {
        for mapping in extensions {
            byType[mapping.resourceType] = byType[mapping.resourceType].map { $0.extended(by: mapping) } ?? mapping
        }
    }

    /// Layers a whole user set: each of its types replaces the default's.
    mutating func layer(_ user: MappingSet) {
        for (type, mapping) in user.byType { byType[type] = mapping }
        if let export = user.export { self.export = export }
        if let activeTasks = user.activeTasks { self.activeTasks = activeTasks }
        if !user.healthKit.file.isEmpty { healthKit = user.healthKit }
    }
}

extension ResourceMapping {
    /// This mapping with `other` (an `extends: default` file) merged in.
    func extended(by other: ResourceMapping) -> ResourceMapping {
        var entities = self.entities
        for extra in other.entities {
            guard let index = entities.firstIndex(where: { $0.name == extra.name }) else {
                entities.append(extra)
                continue
            }
            let base = entities[index]
            var fields = base.fields.filter { field in !extra.fields.contains { $0.target == field.target } }
            fields += extra.fields
            // Located at the extension's entity: what is wrong with the merged entity is the extension's to fix.
            entities[index] = EntityMapping(
                kind: base.kind, name: base.name, each: extra.each ?? base.each, filter: extra.filter ?? base.filter,
                key: extra.key ?? base.key, fields: fields, location: extra.location,
                unreadableEach: extra.each == nil ? extra.unreadableEach ?? base.unreadableEach : nil,
                unreadableTargets: base.unreadableTargets.union(extra.unreadableTargets))
            entities[index].members = extra.members.isEmpty ? base.members : extra.members
        }
        return ResourceMapping(
            resourceType: resourceType, file: file + " + " + other.file, filter: other.filter ?? filter,
            deleteWhen: other.deleteWhen ?? deleteWhen, entities: entities, reports: reports + other.reports)
    }
}
