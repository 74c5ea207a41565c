import FHIR
import Foundation
import XCTest

/// Datatype and narrative rules beyond the element definitions, each from the R4 text, valid and
/// invalid: Attachment (size, hash, contentType) and the narrative's internal references.
final class DatatypeRulesTests: XCTestCase {
    private func errors(_ json: String) throws -> [ValidationIssue] {
        StructureValidator().validate(try FHIRJSON.read(Data(json.utf8))).errors
    }

    private func media(_ content: String) -> String {
        #"{"resourceType":"Media","status":"completed","content":\#(content)}"#
    }

    // "hello" is aGVsbG8= in base64: 5 bytes, SHA-1 qvTGHdzF6KLavt4PO0gs2a6pQ00= in base64.
    /// A Timing valid in FHIR whose numbers CareGate's schedules cannot take: a warning at the number, the
    /// import's own bound and message (issue 27: `validate` says what the import would refuse).
    func testATimingOutsideWhatASchedulesTakesIsAWarningAtItsNumber() throws {
        func carePlan(_ repeating: String) -> String {
            #"{"resourceType":"CarePlan","status":"active","intent":"plan","subject":{"reference":"Patient/p"},"activity":[{"detail":{"status":"scheduled","scheduledTiming":{"repeat":\#(repeating)}}}]}"#
        }
        let cases: [(String, String, String)] = [
            (#"{"frequency":1,"period":1e12,"periodUnit":"a"}"#, "repeat.period", "longer than the 100 years"),
            (#"{"frequency":1000,"period":1,"periodUnit":"s"}"#, "repeat.frequency", "more often than once a second"),
            (#"{"count":5000000,"frequency":1,"period":1,"periodUnit":"d"}"#, "repeat.count", "1000000 occurrences"),
            (#"{"frequency":1,"period":1,"periodUnit":"d","duration":200,"durationUnit":"a"}"#, "repeat.duration", "100 years"),
            (#"{"frequency":1,"period":1,"periodUnit":"d","boundsDuration":{"value":500,"code":"a","system":"http://unitsofmeasure.org","unit":"a"}}"#, "repeat.boundsDuration", "100 years"),
        ]
        for (repeating, place, message) in cases {
            let report = StructureValidator().validate(try FHIRJSON.read(Data(carePlan(repeating).utf8)))
            XCTAssertEqual(report.errors, [], repeating)
            let warnings = report.issues.filter { $0.expression.hasSuffix(place) }
            XCTAssertEqual(warnings.count, 1, "\(repeating): \(report.issues)")
            XCTAssertTrue(warnings.first?.diagnostics.contains(message) ?? false, "\(repeating): \(warnings)")
            XCTAssertTrue(warnings.first?.diagnostics.contains("caregate import refuses it") ?? false)
        }
        let ordinary = StructureValidator().validate(try FHIRJSON.read(Data(carePlan(#"{"frequency":3,"period":1,"periodUnit":"d","count":30}"#).utf8)))
        XCTAssertEqual(ordinary.issues, [], "an ordinary Timing says nothing")
    }

    func testAnAttachmentWhoseSizeAndHashMatchItsDataIsValid() throws {
        XCTAssertEqual(try errors(media(#"{"contentType":"text/plain; charset=utf-8","data":"aGVsbG8=","size":5,"hash":"qvTGHdzF6KLavt4PO0gs2a6pQ00="}"#)), [])
    }

    // size: "the number of bytes of data that make up this attachment (before base64 encoding)".
    func testASizeThatIsNotTheDatasIsAnError() throws {
        let found = try errors(media(#"{"contentType":"text/plain","data":"aGVsbG8=","size":8}"#))
        XCTAssertEqual(found.map(\.expression), ["Media.content.size"])
    }

    // hash: "the calculated hash of the data using SHA-1, represented using base64".
    // A warning, not an error: the official example DiagnosticReport-example-pgx has such a hash.
    func testAHashThatIsNotTheDatasSHA1IsAWarning() throws {
        let json = media(#"{"contentType":"text/plain","data":"aGVsbG8=","hash":"AAAAAAAAAAAAAAAAAAAAAAAAAAA="}"#)
        let found = StructureValidator().validate(try FHIRJSON.read(Data(json.utf8))).issues
        XCTAssertEqual(found.map(\.expression), ["Media.content.hash"])
        XCTAssertEqual(found.map(\.severity), [.warning])
    }

    // contentType: a MIME type, BCP 13.
    func testAContentTypeThatIsNoMIMETypeIsAnError() throws {
        for bad in ["pdf", "text/", "image/png; quality", "text plain"] {
            let found = try errors(media(#"{"contentType":"\#(bad)","url":"http://example.org/x"}"#))
            XCTAssertEqual(found.map(\.expression), ["Media.content.contentType"], bad)
        }
        XCTAssertEqual(try errors(media(#"{"contentType":"application/fhir+json","url":"http://example.org/x"}"#)), [])
    }

    private func observation(narrative: String, more: String = "") -> String {
        #"{"resourceType":"Observation","status":"final","code":{"text":"x"},"text":{"status":"generated","div":"<div xmlns=\"http://www.w3.org/1999/xhtml\">\#(narrative)</div>"}\#(more)}"#
    }

    // A narrative's internal reference points at a contained resource, an element id, or an id in the
    // narrative itself.
    func testNarrativeInternalReferencesMustResolve() throws {
        XCTAssertEqual(try errors(observation(narrative: ##"<a href=\"#n1\">note</a> <p id=\"n1\">text</p>"##)), [])
        XCTAssertEqual(try errors(observation(narrative: ##"<a href=\"#top\">up</a> <a name=\"top\">top</a>"##)), [])
        XCTAssertEqual(try errors(observation(narrative: ##"<a href=\"#c1\">code</a>"##, more: ##","category":[{"id":"c1","text":"vital"}]"##)), [])
        XCTAssertEqual(try errors(observation(
            narrative: ##"<a href=\"#p1\">patient</a>"##,
            more: ##","contained":[{"resourceType":"Patient","id":"p1"}],"subject":{"reference":"#p1"}"##)), [])
        let found = try errors(observation(narrative: ##"<img src=\"#nowhere\" alt=\"x\"/>"##))
        XCTAssertEqual(found.map(\.expression), ["Observation.text.div"])
        XCTAssertTrue(found.first?.diagnostics.contains("#nowhere") ?? false, "\(found)")
    }

    private func issues(_ json: String) throws -> [ValidationIssue] {
        StructureValidator().validate(try FHIRJSON.read(Data(json.utf8))).issues
    }

    // ele-1: "All FHIR elements must have a @value or children", counted as children().count() > id.count().
    func testAnElementWithOnlyAnIDBreaksEle1() throws {
        XCTAssertEqual(try errors(#"{"resourceType":"Patient","_gender":{"id":"g"}}"#).map(\.expression), ["Patient.gender"])
        XCTAssertEqual(try errors(#"{"resourceType":"Patient","maritalStatus":{"id":"m"}}"#).map(\.expression), ["Patient.maritalStatus"])
        XCTAssertEqual(try errors(#"{"resourceType":"Patient","_gender":{"id":"g","extension":[{"url":"http://example.org/x","valueString":"y"}]}}"#), [])
        XCTAssertEqual(try errors(#"{"resourceType":"Patient","maritalStatus":{"id":"m","text":"single"}}"#), [])
    }

    // datatypes.html#uri: OIDs are urn:oid:, UUIDs urn:uuid: and lower case; "oid:"/"uuid:" alone are wrong.
    func testURIsThatLookLikeOIDsOrUUIDsAreWrittenInFull() throws {
        func patient(_ uri: String) -> String { #"{"resourceType":"Patient","implicitRules":"\#(uri)"}"# }
        XCTAssertEqual(try issues(patient("urn:uuid:f3b2bd36-199b-4591-b4db-f49db0912b62")), [])
        XCTAssertEqual(try issues(patient("urn:oid:2.16.840.1.113883")), [])
        for bad in ["oid:2.16.840.1", "uuid:f3b2bd36-199b-4591-b4db-f49db0912b62", "urn:uuid:f3b2bd36-199b-4591-b4db-f49db0912b6",
                    "urn:oid:2.16.08"] {
            XCTAssertEqual(try errors(patient(bad)).map(\.expression), ["Patient.implicitRules"], bad)
        }
        // Upper case is a warning: the official example TerminologyCapabilities-example has it.
        let upper = try issues(patient("urn:uuid:F3B2BD36-199B-4591-B4DB-F49DB0912B62"))
        XCTAssertEqual(upper.map(\.severity), [.warning])
    }

    // references.html#canonical: a canonical is an absolute URL or a fragment (#id). A relative one is a
    // warning: official examples (QuestionnaireResponse-gcs: questionnaire "Questionnaire/gcs") have them.
    func testACanonicalIsAbsoluteOrAFragment() throws {
        func response(_ canonical: String) -> String {
            #"{"resourceType":"QuestionnaireResponse","status":"completed","questionnaire":"\#(canonical)"}"#
        }
        XCTAssertEqual(try issues(response("http://example.org/Questionnaire/q|1.0")), [])
        XCTAssertEqual(try issues(response("Questionnaire/q")).map(\.severity), [.warning])
        // A canonical resource's own url is "an absolute URI".
        XCTAssertEqual(try errors(#"{"resourceType":"Library","url":"Library/x","status":"draft","type":{"text":"x"}}"#)
            .map(\.expression), ["Library.url"])
        XCTAssertEqual(try errors(#"{"resourceType":"Library","url":"http://example.org/Library/x","status":"draft","type":{"text":"x"}}"#), [])
    }

    // A code system is identified by an absolute URI (Coding.system, ValueSet.compose.include.system), and
    // http://hl7.org/fhir/ValueSet/... names a value set, not a code system.
    func testACodeSystemIsNamedByAnAbsoluteURI() throws {
        func coded(_ system: String) -> String {
            #"{"resourceType":"Patient","maritalStatus":{"coding":[{"system":"\#(system)","code":"M"}]}}"#
        }
        XCTAssertEqual(try errors(coded("http://terminology.hl7.org/CodeSystem/v3-MaritalStatus")), [])
        XCTAssertEqual(try errors(coded("urn:oid:2.16.840.1.113883.5.2")), [])
        XCTAssertEqual(try errors(coded("local")).map(\.expression), ["Patient.maritalStatus.coding[0].system"])
        XCTAssertEqual(try errors(coded("http://hl7.org/fhir/ValueSet/marital-status")).map(\.expression),
                       ["Patient.maritalStatus.coding[0].system"])
        XCTAssertEqual(try errors(##"{"resourceType":"ValueSet","status":"draft","compose":{"include":[{"system":"#cs"}]}}"##)
            .map(\.expression), ["ValueSet.compose.include[0].system"])
    }

    // Identifier.system urn:ietf:rfc:3986 means "the identifier is a URI"; a value without a scheme is a
    // warning (the official example Organization-2.16.840.1.113883.19.5 has a bare OID there).
    func testAnRFC3986IdentifierHoldsAURI() throws {
        func organization(_ value: String) -> String {
            #"{"resourceType":"Organization","identifier":[{"system":"urn:ietf:rfc:3986","value":"\#(value)"}]}"#
        }
        XCTAssertEqual(try issues(organization("urn:oid:2.16.840.1.113883.19.5")), [])
        XCTAssertEqual(try issues(organization("2.16.840.1.113883.19.5")).map(\.severity), [.warning])
    }
}
