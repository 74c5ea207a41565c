import FHIRCore
import FHIRPath
/// The R4 invariants (`ElementDefinition.constraint`) that validation evaluates, each compiled once with
/// the project's FHIRPath engine, and those it skips, each with the reason (Docs/invariants.md lists them).
///
/// A constraint is skipped when structural validation already checks it with its own message (`ele-1`,
/// `ext-1`, `dom-2`), when it is a best-practice recommendation (`dom-6`, `con-3`), when its expression needs what CareGate does not have (a terminology service for
/// `memberOf()`, profiles for `conformsTo()`, `resolve()` of references, `htmlChecks()`), when the engine
/// cannot compile it, or when it is listed in `knownDisagreements` (it flags official examples the
/// reference validator accepts).
///
/// ### Members
/// - ``r4`` the catalog of the R4 metadata, built on first use.
/// - ``evaluated`` and ``skipped`` for reports and documentation.
/// - ``invariants(forType:)`` and ``invariants(atPath:)`` what the validator runs per element.
public struct InvariantCatalog: Sendable {
    /// An invariant with its compiled expression.
    public struct Compiled: Sendable {
        public let invariant: Invariant
        public let expression: FHIRPathExpression
        /// The expression reads `%resource` or `%rootResource`: it cannot be judged on a datatype
        /// validated on its own, outside any resource.
        public let needsResource: Bool
        /// The answer told from the element's children where it is certain (per-1, obs-6, obs-7, qty-3).
        let shortcut: InvariantShortcut?
    }

    /// An invariant validation does not evaluate, and why.
    public struct Skipped: Sendable {
        public let invariant: Invariant
        public let reason: String
    }

    /// The catalog of `FHIRMetadata/r4`, compiled once on first use.
    public static let r4 = InvariantCatalog(metadata: .r4)

    /// Constraints checked by ``StructureValidator`` itself, with a message of its own.
    static let checkedStructurally: Set<String> = ["ele-1", "ext-1", "dom-2", "dom-3"]

    /// Constraints the validator checks natively (NativeInvariants.swift): the same rule, key, message
    /// and place as their FHIRPath (corrected as ``corrections`` says), without evaluating an expression
    /// on every Reference, Bundle entry and resource, where they ran most and cost most of the time
    /// invariants took.
    static let checkedNatively: Set<String> = ["ref-1", "bdl-3", "bdl-4", "bdl-5", "bdl-7", "bdl-8", "dom-4", "dom-5"]

    /// Constraints that flag official R4 examples the reference validator accepts: evaluating them here
    /// would make CareGate disagree with it (see Docs/invariants.md).
    static let knownDisagreements: [String: String] = [
        "que-7": "`answer is Boolean` names the System type, which a FHIR `boolean` element is not under the "
            + "N1 type rules our engine follows (the reference engine matches them loosely): it would flag the "
            + "official example Questionnaire-bb, which the reference validator accepts",
    ]

    /// Invariants whose R4 expression does not say what their human text says: que-12 counts `> 2` for
    /// "more than one". Expressions of the form `name.matches('...')` (the `-0` "name should be usable as
    /// an identifier" warnings of the canonical resources), empty when the element is absent, which fails
    /// a constraint (only `true` meets one), are evaluated as `name.exists() implies ...` by
    /// ``correction(of:)``. ref-1 and bdl-8, empty on valid data too, are checked natively with the
    /// meaning of their human text (``checkedNatively``).
    static let corrections: [String: (expression: String, reason: String)] = [
        "que-12": (
            "enableWhen.count() > 1 implies enableBehavior.exists()",
            "\"If there are more than one enableWhen, enableBehavior must be specified\": the R4 expression counts "
                + "`> 2`, an erratum later versions of FHIR correct to `> 1`"),
    ]

    /// The corrected expression of `invariant` and why, or nil when its R4 expression is evaluated as it is.
    static func correction(of invariant: Invariant) -> (expression: String, reason: String)? {
        if let known = corrections[invariant.key] { return known }
        // `element.matches('regex')`: a test of the element's value, empty when the element is absent.
        let expression = invariant.expression
        if let dot = expression.firstIndex(of: "."), expression[dot...].hasPrefix(".matches("), expression.hasSuffix(")"),
           expression[..<dot].allSatisfy({ $0.isLetter }) {
            let element = expression[..<dot]
            return ("\(element).exists() implies \(expression)",
                    "a test of `\(element)`'s value, empty when `\(element)` is absent")
        }
        return nil
    }

    /// Every evaluated invariant, sorted by path and key.
    public let evaluated: [Invariant]
    public let skipped: [Skipped]
    /// The invariants checked natively (`checkedNatively`), by key.
    public let native: [String: Invariant]
    /// The invariants evaluated in a corrected form (`corrections`), with the expression used and why.
    public let corrected: [(invariant: Invariant, expression: String, reason: String)]
    private let byPath: [String: [Compiled]]
    /// Per type name: the invariants of the type and of its base types.
    private let byType: [String: [Compiled]]
    /// Per element definition of every context, by its serial (not choice elements, whose type varies):
    /// all that an instance of it must meet, worked out once instead of three string lookups per element.
    private let byDefinition: [[Compiled]?]
    /// Per choice element definition, by its serial: what an instance of each of its types must meet.
    private let byChoice: [[(type: String, list: [Compiled])]]
    /// Per element definition, by its serial: false when no instance of it has an invariant to meet
    /// (most elements, primitives above all), told without reading the lists.
    private let mayHaveAny: [Bool]

    public init(metadata: FHIRMetadata) {
        var byPath: [String: [Compiled]] = [:]
        var evaluated: [Invariant] = []
        var skipped: [Skipped] = []
        var corrected: [(invariant: Invariant, expression: String, reason: String)] = []
        var native: [String: Invariant] = [:]
        for path in metadata.allInvariants.keys.sorted() {
            for invariant in metadata.invariants(at: path) {
                if Self.checkedNatively.contains(invariant.key) { native[invariant.key] = invariant }
                if let reason = Self.skipReason(invariant) {
                    skipped.append(Skipped(invariant: invariant, reason: reason))
                    continue
                }
                let correction = Self.correction(of: invariant)
                let text = correction?.expression ?? invariant.expression
                do {
                    let expression = try FHIRPathExpression(text)
                    let needsResource = text.contains("%resource") || text.contains("%rootResource")
                    if let correction { corrected.append((invariant, correction.expression, correction.reason)) }
                    byPath[path, default: []].append(
                        Compiled(invariant: invariant, expression: expression, needsResource: needsResource,
                                 shortcut: InvariantShortcut(key: invariant.key, expression: text)))
                    evaluated.append(invariant)
                } catch {
                    skipped.append(Skipped(invariant: invariant, reason: "does not compile: \(error.message)"))
                }
            }
        }
        var byType: [String: [Compiled]] = [:]
        for name in metadata.typeNames {
            var list: [Compiled] = []
            var current: String? = name
            var steps = 0
            while let type = current, steps < 32 {
                list.append(contentsOf: byPath[type] ?? [])
                current = metadata.type(named: type)?.baseType
                steps += 1
            }
            if !list.isEmpty { byType[name] = list }
        }
        self.byPath = byPath
        self.byType = byType
        self.evaluated = evaluated
        self.skipped = skipped
        self.corrected = corrected
        self.native = native
        var byDefinition = [[Compiled]?](repeating: nil, count: metadata.elementCount)
        var byChoice = [[(type: String, list: [Compiled])]](repeating: [], count: metadata.elementCount)
        var contexts = metadata.typeNames
        var seen = Set(contexts)
        while let context = contexts.popLast() {
            for child in metadata.children(of: context)?.values ?? [] {
                if child.isBackbone, seen.insert(child.type).inserted { contexts.append(child.type) }
                guard byDefinition.indices.contains(child.info.serial) else { continue }
                if child.info.isChoice {
                    byChoice[child.info.serial].append((child.type, Self.combined(child, byType: byType, byPath: byPath)))
                } else {
                    byDefinition[child.info.serial] = Self.combined(child, byType: byType, byPath: byPath)
                }
            }
        }
        self.byDefinition = byDefinition
        self.byChoice = byChoice
        mayHaveAny = byDefinition.indices.map { serial in
            if let known = byDefinition[serial] { return !known.isEmpty }
            return true  // a choice, or a definition met only by `combined(_:byType:byPath:)`
        }
    }

    /// What an instance of `child` must meet: its type's invariants, its backbone context's, and those
    /// defined at its definition path, in that order.
    private static func combined(_ child: ResolvedChild, byType: [String: [Compiled]], byPath: [String: [Compiled]]) -> [Compiled] {
        let ofType = byType[child.type] ?? []
        let ofContext = child.isBackbone ? byPath[child.type] ?? [] : []
        let ofPath = child.info.path == child.type ? [] : byPath[child.info.path] ?? []
        return ofType + ofContext + ofPath
    }

    /// False when an instance of `child` has no invariant to meet; true when it may have some
    /// (``invariants(for:)`` tells which).
    func mayHaveInvariants(for child: ResolvedChild) -> Bool {
        let serial = child.info.serial
        return serial < 0 || serial >= mayHaveAny.count || mayHaveAny[serial]
    }

    /// Everything an instance of `child` must meet (`combined(_:byType:byPath:)`).
    public func invariants(for child: ResolvedChild) -> [Compiled] {
        let serial = child.info.serial
        if serial >= 0, serial < byDefinition.count {
            if !child.info.isChoice, let known = byDefinition[serial] { return known }
            // The type names are the metadata's own strings: equal ones compare at once.
            if child.info.isChoice, let known = byChoice[serial].first(where: { $0.type.hasSameBytes(as: child.type) }) { return known.list }
        }
        return Self.combined(child, byType: byType, byPath: byPath)
    }

    /// The invariants every instance of a type must meet: its own and its base types'.
    public func invariants(forType type: String) -> [Compiled] { byType[type] ?? [] }

    /// The invariants defined at a definition path (`"Patient.contact"`, `"Timing.repeat"`).
    public func invariants(atPath path: String) -> [Compiled] { byPath[path] ?? [] }

    private static func skipReason(_ invariant: Invariant) -> String? {
        if checkedStructurally.contains(invariant.key) {
            return "checked by structural validation, with its own message"
        }
        if checkedNatively.contains(invariant.key) {
            return "checked natively by the validator, with the same key, message and place (it runs on every "
                + "Reference, Bundle entry or resource)"
        }
        if let reason = knownDisagreements[invariant.key] { return reason }
        if invariant.isBestPractice {
            return "a best-practice recommendation, which the reference validator does not report by default "
                + "(its outcomes carry none for resources without a narrative, which dom-6 asks for)"
        }
        let expression = invariant.expression
        if expression.contains("memberOf(") { return "memberOf() needs a terminology service" }
        if expression.contains("conformsTo(") { return "conformsTo() needs profiles (StructureDefinitions) CareGate does not load" }
        if expression.contains("htmlChecks()") {
            return "htmlChecks() is not implemented by the engine; the narrative XHTML is checked by XHTMLChecker"
        }
        return nil
    }
}
