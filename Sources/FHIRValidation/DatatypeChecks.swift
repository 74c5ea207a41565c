import FHIRCore
import FHIRPath
/// The rules of the datatypes validation treats apart (``NotableType``), checked on each instance once
/// its children have been visited: references (format, scope, conditional use), extensions (ext-1, a
/// versioned URL), attachments, identifiers whose system says the value is a URI, required bindings of
/// Codings and CodeableConcepts, UCUM units of Quantities, and Timing limits CareGate's import keeps.
extension ValidationWalk {
    /// The rules of the notable datatypes, on the element at `pointer` (read in place: these types, Coding,
    /// CodeableConcept, Reference, Identifier, Extension, are most of the complex elements of a resource).
    mutating func checkComplex(_ pointer: UnsafePointer<Element>, type: NotableType, info: ElementInfo) {
        switch type {
        case .reference:
            if let reference = pointer.childValue("reference") {
                checkReference(reference)
                checkLocalReference(reference)
            }
        case .extension:
            let hasValue = pointer.pointee.children.withUnsafeBufferPointer { children in
                children.indices.contains { children[$0].name.hasBytePrefix("value") }
            }
            if hasValue, pointer.hasChild(named: "extension") {
                report(.error, .invariant, "an extension must have either extensions or a value, not both (ext-1)")
            }
            if let url = pointer.childValue("url"), url.utf8.contains(UInt8(ascii: "|")) {
                report(.error, .value, "an extension URL may not carry a version ('\(url)')", below: ".url")
            }
        case .attachment:
            checkAttachment(pointer.pointee)
        case .identifier:
            // "urn:ietf:rfc:3986: the identifier is a URI" (R4 Identifier.system): the value must be one.
            if let system = pointer.childValue("system"), system.hasSameBytes(as: "urn:ietf:rfc:3986"),
               let value = pointer.childValue("value"),
               !ReferenceFormat.hasScheme(value) {
                // A warning: the official example Organization-2.16.840.1.113883.19.5 has an OID there.
                report(.warning, .value, "an identifier whose system is urn:ietf:rfc:3986 should have a URI as its value, not '\(value)'",
                       below: ".value")
            }
        case .coding:
            if let binding = info.requiredBinding, let code = pointer.childValue("code"), !binding.allows(code) {
                report(.error, .codeInvalid,
                       "the code '\(code)' is not in the value set \(binding.valueSet) (required binding)", below: ".code")
            }
        case .quantity:
            checkQuantityUnit(pointer)
        case .timing:
            // Valid FHIR that CareGate's import refuses (a warning: the file is valid): a schedule takes
            // periods, durations and bounds up to a century, steps of a second or more, bounded counts.
            let problems = pointer.withChild(named: "repeat") { repeating in
                TimingLimits.problems(
                    frequency: repeating.childValue("frequency"), period: repeating.childValue("period"), periodUnit: repeating.childValue("periodUnit"),
                    duration: repeating.childValue("duration"), durationUnit: repeating.childValue("durationUnit"), count: repeating.childValue("count"),
                    boundsDuration: repeating.withChild(named: "boundsDuration") { ($0.childValue("value"), $0.childValue("code") ?? $0.childValue("unit")) })
            } ?? []
            for (element, message) in problems {
                report(.warning, .value, "\(message): caregate import refuses it", below: ".repeat.\(element)")
            }
        case .codeableConcept:
            checkUCUMBinding(pointer, info: info)
            if let binding = info.requiredBinding {
                let codes: [String] = pointer.pointee.children.withUnsafeBufferPointer { children in
                    guard let first = children.baseAddress else { return [] }
                    return children.indices.compactMap { children[$0].name.hasSameBytes(as: "coding") ? (first + $0).childValue("code") : nil }
                }
                if !codes.isEmpty, !codes.contains(where: binding.allows) {
                    report(.error, .codeInvalid,
                           "none of the codes (\(codes.joined(separator: ", "))) is in the value set \(binding.valueSet) (required binding)",
                           below: "")
                }
            }
        default:
            break
        }
    }

    private mutating func checkReference(_ reference: String) {
        noteLocalReference(reference)
        let parsed = ReferenceFormat.parse(reference, metadata: metadata)
        if !scopes.isEmpty, case .success(let format) = parsed { resolveInScope(reference, format: format) }
        switch parsed {
        case .failure(let error):
            // A warning, as the reference validator has it: the syntax looks wrong, but a server may
            // still understand it.
            report(.warning, .value, error.message, below: ".reference")
        case .success(.conditional):
            if bundleType != "transaction", bundleType != "batch" {
                report(.warning, .value,
                       "'\(reference)' is a conditional reference, which only a transaction or batch Bundle resolves",
                       below: ".reference")
            }
        case .success:
            break
        }
    }
}
