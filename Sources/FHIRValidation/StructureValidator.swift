import FHIRCore
import FHIRPath
/// Structural, terminology-free validation of an element tree against the R4 metadata: unknown
/// elements, cardinality, primitive formats and JSON value kinds, choice-type misuse, required-binding
/// codes, resource types, reference formats, narrative XHTML, and a few Bundle rules. Contained
/// resources and Bundle entries are validated in place.
///
/// Every issue carries a FHIRPath-style location from the root
/// (`CarePlan.activity[0].detail.scheduledTiming.repeat.period`); list elements carry an index, single
/// ones do not, and choice elements keep their typed name (`Observation.valueQuantity`).
///
/// ```swift
/// let validator = StructureValidator(options: ValidationOptions(strict: false))
/// let report = validator.validate(resource)
/// print(report.textReport(source: "patient.json"))
/// ```
public struct StructureValidator: Sendable {
    public let metadata: FHIRMetadata
    public var options: ValidationOptions

    public init(metadata: FHIRMetadata = .r4, options: ValidationOptions = ValidationOptions()) {
        self.metadata = metadata
        self.options = options
    }

    /// Validates a root resource (the element returned by the JSON or XML reader).
    public func validate(_ resource: Element) -> ValidationReport {
        var walk = ValidationWalk(metadata: metadata, options: options, root: resource.resourceType ?? resource.name)
        defer { walk.finish() }
        walk.visitResource(resource, isContained: false)
        return ValidationReport(issues: walk.issues)
    }

    /// Validates a datatype instance (`Reference`, `Quantity`, `HumanName`...) on its own; locations
    /// start at `path` (the type name by default).
    public func validate(_ element: Element, asType type: String, path: String? = nil) -> ValidationReport {
        var walk = ValidationWalk(metadata: metadata, options: options, root: path ?? type)
        defer { walk.finish() }
        walk.visitDatatype(element, type: type)
        return ValidationReport(issues: walk.issues)
    }
}

/// One pass over one tree, collecting issues.
struct ValidationWalk {
    let metadata: FHIRMetadata
    let options: ValidationOptions
    private(set) var issues: [ValidationIssue] = []
    /// The type of the innermost Bundle, for the rules that depend on it (conditional references).
    private(set) var bundleType: String?
    /// The Bundles and Parameters being walked, innermost last, collecting their references.
    var scopes: [ReferenceScope] = []
    /// The invariants to evaluate, nil when switched off.
    let invariants: InvariantCatalog?
    let fhirPathEnvironment: FHIRPathEnvironment
    /// `%resource` and `%rootResource` of the element being visited.
    /// The definition path of the element whose children are being visited (`Patient.birthDate`,
    /// `HumanName.given`); nil for a resource. For extension contexts.
    var currentDefinitionPath: String? { currentDefinition?.takeUnretainedValue().path }
    /// The definition behind ``currentDefinitionPath``, not retained (entering an element retained its
    /// path): each is held by the metadata, or for ``StructureValidator/validate(_:asType:path:)`` by the
    /// walk's caller, for the whole walk.
    private var currentDefinition: Unmanaged<ElementInfo>?
    /// Where the current resource's steps start, and its type: for paths from the resource.
    private var resourceStart = 0
    private var resourceTypeName: String?
    private(set) var currentResource: Element?
    private(set) var currentRootResource: Element?
    /// Where the walk is: the root's path, then one step per element entered (the element, read in
    /// place in the tree being walked, and, in a list, its index, else -1). The text of a location is
    /// made only when an issue is reported there, from the elements' names: a step holds no reference,
    /// so entering an element retains and releases nothing for it. Every step points into the children
    /// of an element being visited, whose array stays alive and unchanged while the step is on the list.
    private let root: String
    /// The steps, in a buffer of the walk's own (`stepCount` of `stepCapacity` in use), freed by
    /// ``finish()``: an array's append and removal checked its buffer's uniqueness for every element.
    private var stepBuffer: UnsafeMutablePointer<Step>
    private(set) var stepCount = 0
    private var stepCapacity = 64
    /// The steps from the root, innermost last (copied out: for reports and rare checks).
    var steps: [Step] { Array(UnsafeBufferPointer(start: stepBuffer, count: stepCount)) }
    /// The innermost step, nil at the root.
    var lastStep: Step? { stepCount > 0 ? stepBuffer[stepCount - 1] : nil }

    struct Step {
        let element: UnsafePointer<Element>
        let index: Int
        var name: String { element.pointee.name }
    }
    /// The per-definition child counts of the elements being visited, innermost last: one buffer for
    /// the walk rather than an array per complex element. Only `0..<countsTop` is in use; the buffer
    /// keeps its size, so entering an element zeroes its range instead of appending one. The walk's
    /// own memory (`countCapacity` Ints), freed by ``finish()``.
    private var childCounts: UnsafeMutablePointer<Int>
    private var countCapacity = 256
    private var countsTop = 0
    /// Per element whose children are being visited, innermost last, as stacks the walk keeps (a frame's
    /// entries are those from where its count stood on entry; it removes them on leaving): the instance
    /// name a choice took first, the choices already reported as conflicting (no second issue for their
    /// count), and the definitions with more children than their maximum. Three arrays made per complex
    /// element were three releases each time, nearly always of empty arrays.
    private var choiceNames: [(order: Int, name: String)] = []
    private var conflictingChoices: [Int] = []
    private var overMaximum: [Int] = []
    /// The local references (dom-3) of the resources being visited that contain resources, innermost
    /// last: collected as the walk meets them rather than by walking each such resource again.
    var localReferences: [LocalReferences] = []
    /// `Bundle.entry`'s definition, told by identity (its address) where a child is visited.
    private let bundleEntry: UnsafeMutableRawPointer?
    /// The metadata's children as flat tables (``FHIRMetadata/childLookup``): valid while `metadata`,
    /// held by this walk, is alive.
    private let lookup: ChildLookup

    init(metadata: FHIRMetadata, options: ValidationOptions, root: String) {
        self.metadata = metadata
        self.options = options
        self.root = root
        bundleEntry = metadata.element(named: "entry", of: "Bundle").map { Unmanaged.passUnretained($0).toOpaque() }
        lookup = metadata.childLookup
        stepBuffer = .allocate(capacity: stepCapacity)
        childCounts = .allocate(capacity: countCapacity)
        if options.checkInvariants {
            invariants = metadata === FHIRMetadata.r4 ? InvariantCatalog.r4 : InvariantCatalog(metadata: metadata)
        } else {
            invariants = nil
        }
        // Cardinality is reported by the structural checks, so invariants may trust it (see the option).
        fhirPathEnvironment = FHIRPathEnvironment(metadata: metadata, trustsSingleCardinality: true)
    }

    /// Frees the walk's buffers: the last call on a walk.
    mutating func finish() {
        stepBuffer.deallocate()
        childCounts.deallocate()
        stepCount = 0
        stepCapacity = 0
        countCapacity = 0
    }

    /// Enters `step` (the buffer doubles when full; steps point into the tree, not into the buffer).
    @inline(__always)
    private mutating func pushStep(_ step: Step) {
        if stepCount == stepCapacity {
            let grown = UnsafeMutablePointer<Step>.allocate(capacity: stepCapacity * 2)
            grown.moveInitialize(from: stepBuffer, count: stepCount)
            stepBuffer.deallocate()
            stepBuffer = grown
            stepCapacity *= 2
        }
        (stepBuffer + stepCount).initialize(to: step)
        stepCount += 1
    }

    mutating func report(_ severity: ValidationIssue.Severity, _ code: ValidationIssue.Code, _ message: String, at path: String) {
        issues.append(issue(severity, code, message, at: path))
    }

    func issue(_ severity: ValidationIssue.Severity, _ code: ValidationIssue.Code, _ message: String, at path: String) -> ValidationIssue {
        ValidationIssue(severity: severity, code: code, diagnostics: MessageText.boundingQuotes(message), expression: path)
    }

    /// Reports at the element being visited, or at `suffix` below it (`.reference`).
    mutating func report(_ severity: ValidationIssue.Severity, _ code: ValidationIssue.Code, _ message: String, below suffix: String = "") {
        report(severity, code, message, at: currentPath + suffix)
    }

    /// The path of the element whose child is being visited, from its resource and without indexes
    /// (`Patient.contact.name`): the last step is the child's.
    var pathFromResource: String? {
        guard let type = resourceTypeName, stepCount > resourceStart else { return nil }
        return ([type] + steps[resourceStart..<(stepCount - 1)].map(\.name)).joined(separator: ".")
    }

    /// The FHIRPath-style location of the element being visited
    /// (`CarePlan.activity[0].detail.scheduledTiming.repeat.period`).
    var currentPath: String { path(of: steps) }

    /// The location text of `steps` (from the root).
    func path(of steps: [Step]) -> String {
        var text = root
        for step in steps {
            text += "." + step.name
            if step.index >= 0 { text += "[\(step.index)]" }
        }
        return text
    }

    // MARK: Resources

    mutating func visitResource(_ resource: Element, isContained: Bool) {
        guard let type = resource.resourceType else {
            report(.error, .structure, "expected a resource (with a resourceType) here")
            return
        }
        guard metadata.isResourceType(type) else {
            if metadata.type(named: type)?.kind == .resource {
                report(.error, .structure, "'\(type)' is an abstract resource type and cannot be instantiated")
            } else {
                report(.error, .structure, "unknown resource type '\(type)'")
            }
            return
        }
        let outerBundleType = bundleType
        if type.hasSameBytes(as: "Bundle") { bundleType = resource.valueInPlace(of: "type") }
        defer { bundleType = outerBundleType }
        if isContained, !resource.children(named: "contained").isEmpty {
            report(.error, .structure, "a contained resource may not contain resources (dom-2)", below: ".contained")
        }
        let scope: ReferenceScope? = switch type {
        case "Bundle": .bundle(resource)
        case "Parameters": .parameters(resource)
        default: nil
        }
        if let scope { scopes.append(scope) }
        // dom-3 is judged on a resource that contains others, from what its content refers to.
        let containedCount = resource.children.reduce(0) { $0 + ($1.name.hasSameBytes(as: "contained") ? 1 : 0) }
        let collectsLocalReferences = !isContained && options.validateContained && containedCount > 0
        if collectsLocalReferences { localReferences.append(LocalReferences(start: stepCount, containedCount: containedCount)) }
        // A contained resource's references to `#` are its own; those of resources it contains count for it.
        let enteredContained = isContained && enterContained()
        let outerResource = currentResource, outerRootResource = currentRootResource
        let outer = (resourceStart, resourceTypeName, currentDefinition)
        (resourceStart, resourceTypeName, currentDefinition) = (stepCount, type, nil)
        defer { (resourceStart, resourceTypeName, currentDefinition) = outer }
        currentResource = resource
        currentRootResource = isContained ? (outerResource ?? resource) : resource
        defer { currentResource = outerResource; currentRootResource = outerRootResource }
        visitChildren(resource.children, context: type)
        if type.hasSameBytes(as: "Bundle") { checkBundle(resource) }
        if enteredContained, let last = localReferences.indices.last { localReferences[last].currentContained = nil }
        if containedCount > 0 { checkContainedMeta(of: resource) }
        // Contained resources left unvalidated (ValidationOptions.validateContained) are not judged.
        if collectsLocalReferences, let collected = localReferences.popLast() { checkContained(of: resource, references: collected) }
        checkNarrativeReferences(of: resource)
        checkResourceInvariants(resource, type: type)
        if scope != nil, let finished = scopes.popLast() { issues += finished.resolutionIssues }
    }

    mutating func visitDatatype(_ element: Element, type: String) {
        guard metadata.type(named: type) != nil else {
            report(.error, .structure, "unknown type '\(type)'")
            return
        }
        let info = ElementInfo(
            path: type, name: element.name, types: [type], min: 0, max: 1, isChoice: false, isModifier: false,
            isSummary: false, representation: .element, requiredBinding: nil, childContext: nil, order: 0)
        withUnsafePointer(to: element) { visitElement($0, as: ResolvedChild(info: info, type: type)) }
    }

    // MARK: Children and cardinality

    /// Visits `elementChildren`, the children of an element or resource of the metadata context `context`
    /// (found by `contextIndex` when known), and checks their cardinality.
    ///
    /// Names are resolved through ``FHIRMetadata/childLookup``, flat tables of plain values: nothing
    /// looked up is retained or released (a lookup by ``NameTable`` handed out a counted reference, and
    /// the context's tables were retained per element visited). The pointers it gives are valid while
    /// `metadata`, which the walk holds, is alive.
    mutating func visitChildren(_ elementChildren: [Element], context: String, contextIndex: Int = -1) {
        let contextPosition = contextIndex >= 0 ? contextIndex : (metadata.contextIndex(named: context) ?? -1)
        let table = lookup.context(at: contextPosition)
        let definitionCount = table.definitionCount
        // Per definition (by its order): how many children it has, which is also the list index of the
        // next one (in `childCounts` from `base`); and the instance name a choice took first. Arrays,
        // not dictionaries: this runs for every complex element.
        let base = countsTop
        countsTop = base + definitionCount
        if countCapacity < countsTop {
            let capacity = Swift.max(countCapacity * 2, countsTop + 64)
            let grown = UnsafeMutablePointer<Int>.allocate(capacity: capacity)
            grown.moveInitialize(from: childCounts, count: base)
            childCounts.deallocate()
            (childCounts, countCapacity) = (grown, capacity)
        }
        if definitionCount > 0 { (childCounts + base).initialize(repeating: 0, count: definitionCount) }
        let choiceBase = choiceNames.count, conflictBase = conflictingChoices.count, overBase = overMaximum.count
        // Children are visited in place, by their address in the array: a copy of an Element is four
        // retains and releases, and this runs for every element of the tree. The tree is the caller's,
        // unchanged while the walk runs, and the buffer outlives every visit made inside this closure.
        elementChildren.withUnsafeBufferPointer { elementChildren in
            guard let first = elementChildren.baseAddress else { return }
            for position in elementChildren.indices {
                // The name is looked up where it sits (a copy of it is a retain and a release per element).
                guard let slot = lookup.child(named: (first + position).pointee.name, in: table) else {
                    reportUnknown(elementChildren[position], context: context)
                    continue
                }
                let order = Int(slot.pointee.order)
                let counted = order < definitionCount
                let index = counted ? childCounts[base + order] : 0
                if counted {
                    childCounts[base + order] = index + 1
                    if index == Int(slot.pointee.maximum) { overMaximum.append(order) }
                }
                if slot.pointee.isChoice {
                    let name = elementChildren[position].name
                    if let first = firstChoiceName(of: order, from: choiceBase), first != name {
                        conflictingChoices.append(order)
                        let path = slot.pointee.info.takeUnretainedValue().path
                        report(.error, .structure,
                               "'\(name)' and '\(first)' are both values of \(path); only one type is allowed",
                               below: "." + name)
                    } else if index == 0 {
                        choiceNames.append((order, name))
                    }
                }
                let isArray = slot.pointee.isArray
                if options.checkJSONArrayShape, elementChildren[position].jsonArrayItem != isArray, index == 0 {
                    reportArrayShape(of: elementChildren[position], info: slot.pointee.info.takeUnretainedValue())
                }
                pushStep(Step(element: first + position, index: isArray ? index : -1))
                if slot.pointee.info.toOpaque() == bundleEntry, !scopes.isEmpty { scopes[scopes.count - 1].currentEntry = index }
                if slot.pointee.isExtensionField {
                    checkExtension(elementChildren[position], holder: context)
                }
                // The metadata (held by the walk) keeps every definition alive: no retain for it here.
                slot.pointee.resolved._withUnsafeGuaranteedRef { visitElement(first + position, as: $0) }
                stepCount -= 1
            }
        }
        // Cardinality, reported in definition order: only a required definition can fall short of its
        // minimum, and only one noted above can exceed its maximum, so those are all that are read.
        let required = lookup.required(of: table)
        var nextRequired = 0
        if overMaximum.count > overBase + 1 { overMaximum[overBase...].sort() }
        if overMaximum.count > overBase, let definitions = metadata.context(at: contextPosition)?.elements {
            for order in overMaximum[overBase...] {
                while nextRequired < required.count, required[nextRequired].takeUnretainedValue().order < order {
                    checkMinimum(required[nextRequired].takeUnretainedValue(), base: base)
                    nextRequired += 1
                }
                let info = definitions[order]
                if let max = info.max, !conflictingChoices[conflictBase...].contains(order) {
                    report(.error, .structure,
                           "max allowed = \(max), but found \(childCounts[base + order]) (\(info.path))", below: "." + info.name)
                }
            }
        }
        while nextRequired < required.count {
            required[nextRequired]._withUnsafeGuaranteedRef { checkMinimum($0, base: base) }
            nextRequired += 1
        }
        countsTop = base
        if choiceNames.count > choiceBase { choiceNames.removeSubrange(choiceBase...) }
        if conflictingChoices.count > conflictBase { conflictingChoices.removeSubrange(conflictBase...) }
        if overMaximum.count > overBase { overMaximum.removeSubrange(overBase...) }
    }

    /// The instance name the choice definition `order` took first among the children being visited (whose
    /// entries in ``choiceNames`` start at `start`), nil before its first.
    private func firstChoiceName(of order: Int, from start: Int) -> String? {
        var position = start
        while position < choiceNames.count {
            if choiceNames[position].order == order { return choiceNames[position].name }
            position += 1
        }
        return nil
    }

    /// Reports `info` (a required definition of the context whose counts start at `base`) when it has
    /// fewer children than its minimum.
    private mutating func checkMinimum(_ info: ElementInfo, base: Int) {
        let count = childCounts[base + info.order]
        if count < info.min {
            report(.error, .required,
                   "minimum required = \(info.min), but only found \(count) (\(info.path))", below: "." + info.name)
        }
    }

    /// A JSON array for an element with max 1, or a single JSON value for one that repeats; reported once
    /// per field, at the field.
    private mutating func reportArrayShape(of child: Element, info: ElementInfo) {
        let maximum = info.max.map(String.init) ?? "*"
        let message = info.isArray
            ? "'\(child.name)' must be a JSON array, not a single value: \(info.path) repeats (max \(maximum))"
            : "'\(child.name)' must be a single JSON value, not an array: \(info.path) does not repeat (max 1)"
        report(.error, .structure, message, below: "." + child.name)
    }

    private mutating func reportUnknown(_ child: Element, context: String) {
        let childPath = currentPath + "." + child.name
        // A choice element with a type suffix the definition does not allow (`valueMoney` on Observation).
        for info in metadata.elements(of: context) where info.isChoice && child.name.hasPrefix(info.name) {
            let suffix = child.name.dropFirst(info.name.count)
            guard let first = suffix.first, first.isUppercase else { continue }
            report(.error, .structure,
                   "'\(suffix)' is not an allowed type of \(info.path) (allowed: \(info.types.joined(separator: ", ")))",
                   at: childPath)
            return
        }
        let message = "unknown element '\(child.name)' in \(context)"
        report(options.strict ? .error : .warning, .structure, message, at: childPath)
    }

    // MARK: Elements

    /// Visits the element at `element` (in the tree being walked, read in place) as `resolved`.
    private mutating func visitElement(_ element: UnsafePointer<Element>, as resolved: ResolvedChild) {
        if resolved.notableType == .resource {
            if resolved.info.name == "contained", !options.validateContained { return }
            visitResource(element.pointee, isContained: resolved.info.name == "contained")
            return
        }
        if element.pointee.resourceType != nil {
            report(.error, .structure, "a resource is not allowed here (expected \(resolved.type))")
            return
        }
        if let primitive = resolved.primitive {
            visitPrimitive(element, type: primitive, as: resolved)
            return
        }
        if element.pointee.value != nil {
            report(.error, .structure,
                   "'\(element.pointee.name)' is a \(resolved.type), an object, not a primitive value ('\(element.pointee.value ?? "")')")
        }
        if element.pointee.children.isEmpty {
            if element.pointee.value == nil {
                report(.error, .invariant, "an element must have a value or children (ele-1)")
            }
            return
        }
        if element.pointee.value == nil, Self.hasOnlyAnID(element.pointee.children) {
            report(.error, .invariant, "an element must have a value or children other than its id (ele-1)")
        }
        let outerDefinition = currentDefinition
        currentDefinition = Unmanaged.passUnretained(resolved.info)
        visitChildren(element.pointee.children, context: resolved.type, contextIndex: resolved.contextIndex)
        currentDefinition = outerDefinition
        if resolved.notableType != .other {
            checkComplex(element, type: resolved.notableType, info: resolved.info)
        }
        checkElementInvariants(element, as: resolved)
    }

    private mutating func visitPrimitive(_ element: UnsafePointer<Element>, type: PrimitiveType, as resolved: ResolvedChild) {
        let info = resolved.info
        let hasChildren = !element.pointee.children.isEmpty
        if let value = element.pointee.value {
            checkPrimitiveValue(value, valueKind: element.pointee.valueKind, type: type, info: info)
        } else if !hasChildren {
            report(.error, .required, "a primitive element must have a value or extensions")
        } else if Self.hasOnlyAnID(element.pointee.children) {
            report(.error, .invariant, "a primitive element must have a value or extensions, not only an id (ele-1)")
        }
        if hasChildren {
            let outerDefinition = currentDefinition
            currentDefinition = Unmanaged.passUnretained(info)
            visitChildren(element.pointee.children, context: type.rawValue, contextIndex: resolved.contextIndex)
            currentDefinition = outerDefinition
        }
        checkElementInvariants(element, as: resolved)
    }

    private mutating func checkPrimitiveValue(
        _ value: String, valueKind: Element.ValueKind, type: PrimitiveType, info: ElementInfo
    ) {
        if !localReferences.isEmpty {
            switch type {
            case .canonical, .uri, .url: noteLocalReference(value)
            // A narrative refers to a contained resource by a link or an image: href="#id", src="#id".
            case .xhtml: XHTMLChecker.internalLinks(in: value).targets.forEach { noteLocalReference($0) }
            default: break
            }
        }
        if type == .xhtml {
            if options.checkJSONValueKinds, valueKind != .string {
                report(.error, .value, "xhtml must be a JSON string")
            }
            for problem in XHTMLChecker.problems(in: value) {
                report(.error, .value, problem)
            }
            return
        }
        // By the name first (system, source, target): the path's lookup hashed it for every uri.
        if type == .uri, info.name.hasSameBytes(as: "system") || info.name.hasSameBytes(as: "source") || info.name.hasSameBytes(as: "target"),
           Self.codeSystemElements.contains(where: info.path.hasSameBytes), let problem = URIRules.codeSystemProblem(value) {
            report(.error, .value, problem)
        }
        let kind = options.checkJSONValueKinds ? valueKind : nil
        if let problem = PrimitiveValidator.problem(with: value, kind: kind, as: type) {
            let isResourceID = info.name == "id" && type == .id
            report(.error, .value, (isResourceID ? "invalid resource id: " : "") + problem + " ('\(value.prefix(80))')",)
            return
        }
        if type == .uri || type == .url || type == .canonical, let problem = URIRules.problem(with: value, as: type) {
            report(problem.severity, .value, problem.message)
            if problem.severity == .error { return }
        }
        // Extension.url, the commonest `url` by far, is no resource's: its path is not looked up.
        if type == .uri, info.name.hasSameBytes(as: "url"), !info.path.hasSameBytes(as: "Extension.url"),
           metadata.isCanonicalResourceURL(path: info.path), !ReferenceFormat.hasScheme(value) {
            report(.error, .value, "the canonical URL of a \(info.path.prefix { $0 != "." }) must be an absolute URI ('\(value)')")
        }
        if type == .markdown, !options.allowHTMLInMarkdown, Self.containsHTMLTag(value) {
            report(.error, .value, "the markdown contains an embedded HTML tag, which is not allowed here")
        }
        if let binding = info.requiredBinding, type == .code || type == .string || type == .uri,
           !binding.allows(value) {
            report(.error, .codeInvalid,
                   "the code '\(value)' is not in the value set \(binding.valueSet) (required binding)")
        }
    }

    /// The `uri` elements that identify a code system by its URI (compared by length first: cheaper than
    /// hashing the path for each of the many `system` elements).
    private static let codeSystemElements = [
        "Coding.system", "ValueSet.compose.include.system", "ValueSet.compose.exclude.system",
        "ValueSet.expansion.contains.system", "ConceptMap.group.source", "ConceptMap.group.target",
    ]

    /// ele-1 counts children other than the element's id (`children().count() > id.count()`): whether
    /// the `children` of an element without a value are nothing but an id.
    private static func hasOnlyAnID(_ children: [Element]) -> Bool {
        !children.isEmpty && children.allSatisfy { $0.name.hasSameBytes(as: "id") }
    }

    private static func containsHTMLTag(_ text: String) -> Bool {
        var previous: Character = " "
        for character in text {
            if previous == "<", character.isLetter || character == "/" { return true }
            previous = character
        }
        return false
    }
}
