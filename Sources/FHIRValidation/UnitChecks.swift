import FHIRCore

/// UCUM units (family 2), by their syntax (``UCUMSyntax``): CareGate has no table of UCUM atoms, so a
/// well-formed unit made of an atom that does not exist is not reported.
///
/// - Where R4 binds an element to the UCUM value set with strength required (`ucum-units`: every UCUM
///   unit), a coding of the UCUM system must be a well-formed unit, and one coding at least must be of
///   that system (the required binding), as for the bindings the core package can expand: an error.
/// - A Quantity (or Age, Count, Distance, Duration) whose `system` is UCUM gives its unit in `code` as a
///   UCUM expression (R4 datatypes, Quantity.system: "the system that defines the coded unit form"): a
///   malformed one is an error, as the reference validator reports a UCUM code it cannot read
///   (code-invalid).
extension ValidationWalk {
    static let ucumSystem = "http://unitsofmeasure.org"

    /// The R4 elements bound, required, to http://hl7.org/fhir/ValueSet/ucum-units (all CodeableConcept).
    /// `UnitChecksTests` checks this list against the R4 StructureDefinitions.
    static let ucumBoundElements: Set<String> = [
        "EffectEvidenceSynthesis.effectEstimate.unitOfMeasure",
        "ResearchElementDefinition.characteristic.unitOfMeasure",
        "RiskEvidenceSynthesis.riskEstimate.unitOfMeasure",
    ]
    /// Their names: a test cheaper than hashing the path of every CodeableConcept.
    static let ucumBoundNames = Array(Set(ucumBoundElements.map { String($0.split(separator: ".").last ?? "") }))

    /// A Quantity's UCUM code (the Quantity at `quantity`, read in place) is well formed.
    mutating func checkQuantityUnit(_ quantity: UnsafePointer<Element>) {
        guard let code = quantity.childValue("code"), quantity.childValue("system") == Self.ucumSystem,
              let problem = UCUMSyntax.problem(in: code)
        else { return }
        report(.error, .codeInvalid, problem, below: ".code")
    }

    /// A CodeableConcept (at `pointer`, read in place) bound to ucum-units with strength required has a
    /// well-formed UCUM coding.
    mutating func checkUCUMBinding(_ pointer: UnsafePointer<Element>, info: ElementInfo) {
        guard Self.ucumBoundNames.contains(where: info.name.hasSameBytes), Self.ucumBoundElements.contains(info.path) else { return }
        let concept = pointer.pointee
        var index = -1, hasUCUMCoding = false, hasCoding = false
        for coding in concept.children where coding.name.hasSameBytes(as: "coding") {
            index += 1
            guard let code = coding.valueInPlace(of: "code") else { continue }
            hasCoding = true
            guard coding.valueInPlace(of: "system") == Self.ucumSystem else { continue }
            hasUCUMCoding = true
            if let problem = UCUMSyntax.problem(in: code) {
                report(.error, .codeInvalid, problem + " (required binding to http://hl7.org/fhir/ValueSet/ucum-units)",
                       below: ".coding[\(index)].code")
            }
        }
        if hasCoding, !hasUCUMCoding {
            report(.error, .codeInvalid,
                   "none of the codings is a UCUM unit (system \(Self.ucumSystem)), which the required binding to "
                       + "http://hl7.org/fhir/ValueSet/ucum-units asks for")
        }
    }
}
