/// The extension URLs the survey model reads, from R4 core, the R4/R5 extensions pack and SDC
/// (http://hl7.org/fhir/uv/sdc). One place, so that a reader can see which extensions CareGate acts on.
public enum SurveyExtensionURL {
    /// R4 core's score of an answer option or Coding (renamed `itemWeight` later).
    public static let ordinalValue = "http://hl7.org/fhir/StructureDefinition/ordinalValue"
    /// The score of an answer option or Coding as SDC 4 and the extensions pack name it.
    public static let itemWeight = "http://hl7.org/fhir/StructureDefinition/itemWeight"
    /// `minValue` and `maxValue` (R4 core extensions, used by SDC).
    public static let minValue = "http://hl7.org/fhir/StructureDefinition/minValue"
    public static let maxValue = "http://hl7.org/fhir/StructureDefinition/maxValue"
    /// SDC's calculated answer (an Expression).
    public static let calculatedExpression = "http://hl7.org/fhir/uv/sdc/StructureDefinition/sdc-questionnaire-calculatedExpression"
    /// SDC's enablement by expression (an Expression giving a boolean).
    public static let enableWhenExpression = "http://hl7.org/fhir/uv/sdc/StructureDefinition/sdc-questionnaire-enableWhenExpression"
    /// SDC's observation-based extraction flag (boolean), on an item, a group or the root.
    public static let observationExtract = "http://hl7.org/fhir/uv/sdc/StructureDefinition/sdc-questionnaire-observationExtract"
    /// SDC's category of extracted Observations (CodeableConcept).
    public static let observationExtractCategory = "http://hl7.org/fhir/uv/sdc/StructureDefinition/sdc-questionnaire-observation-extract-category"
    /// R4 core's rendering hint (CodeableConcept), reported only.
    public static let itemControl = "http://hl7.org/fhir/StructureDefinition/questionnaire-itemControl"
    /// R4 core's expression extension, which the R4 examples use for CQL.
    public static let cqfExpression = "http://hl7.org/fhir/StructureDefinition/cqf-expression"
    /// R4 core's reason a value is absent (code), written for "I don't know".
    public static let dataAbsentReason = "http://hl7.org/fhir/StructureDefinition/data-absent-reason"
}

extension Element {
    /// The extensions of this element with `url`.
    func extensions(_ url: String) -> [Element] {
        children.filter { $0.name == "extension" && $0.childValue("url") == url }
    }

    /// The first extension with `url`.
    func `extension`(_ url: String) -> Element? {
        children.first { $0.name == "extension" && $0.childValue("url") == url }
    }

    /// The `value[x]` child of an extension (or of any element with a `value[x]` choice).
    var choiceValue: Element? {
        children.first { $0.name.hasPrefix("value") && $0.name.count > 5 }
    }

    /// The numeric weight an element carries in an `itemWeight` or `ordinalValue` extension.
    var weightExtension: Decimal? {
        for url in [SurveyExtensionURL.itemWeight, SurveyExtensionURL.ordinalValue] {
            if let text = self.extension(url)?.choiceValue?.value, let number = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) {
                return number
            }
        }
        return nil
    }
}

import FHIRCore
import Foundation
