import CareModel
import FHIR
import Foundation
import Surveys

/// Questionnaires written for these tests (from the R4 rules, not from an example) and helpers.
enum SurveyTestQuestionnaires {
    /// Covers: boolean, integer with min/max, a scored choice, a string with maxLength, a required
    /// item enabled by an answer, an item nested under a question, a repeating group, a display item.
    static let symptoms = """
    {"resourceType": "Questionnaire", "id": "symptoms", "url": "http://example.org/Questionnaire/symptoms", "version": "2",
     "status": "active",
     "item": [
      {"linkId": "intro", "type": "display", "text": "About today"},
      {"linkId": "pain", "type": "boolean", "text": "Any pain?", "required": true,
       "item": [{"linkId": "where", "type": "string", "text": "Where?", "maxLength": 10}]},
      {"linkId": "level", "type": "integer", "text": "How bad (0-10)?", "required": true,
       "enableWhen": [{"question": "pain", "operator": "=", "answerBoolean": true}],
       "extension": [{"url": "http://hl7.org/fhir/StructureDefinition/minValue", "valueInteger": 0},
                     {"url": "http://hl7.org/fhir/StructureDefinition/maxValue", "valueInteger": 10}]},
      {"linkId": "mood", "type": "choice", "text": "Mood",
       "answerOption": [
        {"valueCoding": {"system": "http://example.org/mood", "code": "good", "display": "Good"},
         "extension": [{"url": "http://hl7.org/fhir/StructureDefinition/itemWeight", "valueDecimal": 0}]},
        {"valueCoding": {"system": "http://example.org/mood", "code": "low", "display": "Low"},
         "extension": [{"url": "http://hl7.org/fhir/StructureDefinition/itemWeight", "valueDecimal": 2}]}]},
      {"linkId": "meds", "type": "group", "repeats": true, "text": "Medicines taken",
       "item": [{"linkId": "med", "type": "string", "required": true}, {"linkId": "dose", "type": "decimal"}]},
      {"linkId": "when", "type": "date", "text": "Since when?"}
     ]}
    """

    static func questionnaire(_ json: String) throws -> Questionnaire {
        try Questionnaire(FHIRJSON.read(Data(json.utf8)))
    }

    static func corpus(_ name: String) throws -> Element {
        try FHIRJSON.read(Data(contentsOf: Corpus.folder("fhir-r4-examples").appendingPathComponent(name)))
    }

    static func value(_ kind: String, _ value: OutcomeValue.Value, units: String? = nil) -> OutcomeValue {
        OutcomeValue(value, units: units, kind: kind)
    }
}

import TestSupport
