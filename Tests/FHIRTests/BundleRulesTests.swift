import FHIR
import Foundation
import XCTest

/// The R4 Bundle rules by Bundle type (https://hl7.org/fhir/R4/bundle.html and its invariants
/// bdl-1 to bdl-12), each from the specification's text, valid and invalid.
final class BundleRulesTests: XCTestCase {
    private func errors(_ json: String) throws -> [ValidationIssue] {
        StructureValidator().validate(try FHIRJSON.read(Data(json.utf8))).errors
    }

    private func bundle(_ type: String, _ entries: [String], more: String = "") -> String {
        #"{"resourceType":"Bundle","type":"\#(type)"\#(more),"entry":[\#(entries.joined(separator: ","))]}"#
    }

    private let patient = #"{"fullUrl":"http://example.org/fhir/Patient/p1","resource":{"resourceType":"Patient","id":"p1"}"#

    private func assertBreaks(_ key: String, _ json: String, line: UInt = #line) throws {
        let found = try errors(json)
        XCTAssertTrue(found.contains { $0.diagnostics.contains(key) }, "expected \(key): \(found)", line: line)
    }

    func testAValidCollectionHasNoIssues() throws {
        XCTAssertEqual(try errors(bundle("collection", [patient + "}"])), [])
    }

    // bdl-1: "total only when a search or history".
    func testTotalOnlyInSearchsetOrHistory() throws {
        try assertBreaks("bdl-1", bundle("collection", [patient + "}"], more: #","total":1"#))
        XCTAssertEqual(try errors(bundle("searchset", [patient + #","search":{"mode":"match"}}"#], more: #","total":1"#)), [])
    }

    // bdl-2: "entry.search only when a search".
    func testSearchOnlyInSearchset() throws {
        try assertBreaks("bdl-2", bundle("collection", [patient + #","search":{"mode":"match"}}"#]))
    }

    // bdl-3: "entry.request mandatory for batch/transaction/history, otherwise prohibited".
    func testRequestByBundleType() throws {
        try assertBreaks("bdl-3", bundle("transaction", [patient + "}"]))
        try assertBreaks("bdl-3", bundle("collection", [patient + #","request":{"method":"PUT","url":"Patient/p1"}}"#]))
        XCTAssertEqual(try errors(bundle("transaction", [patient + #","request":{"method":"PUT","url":"Patient/p1"}}"#])), [])
    }

    // bdl-4: "entry.response mandatory for batch-response/transaction-response/history, otherwise prohibited".
    func testResponseByBundleType() throws {
        try assertBreaks("bdl-4", bundle("transaction-response", [#"{"resource":{"resourceType":"Patient","id":"p1"}}"#]))
        try assertBreaks("bdl-4", bundle("collection", [patient + #","response":{"status":"200 OK"}}"#]))
        XCTAssertEqual(try errors(bundle("transaction-response", [#"{"response":{"status":"201 Created","location":"Patient/p1/_history/1"}}"#])), [])
    }

    // bdl-5: "must be a resource unless there's a request or response".
    func testAnEntryNeedsAResourceRequestOrResponse() throws {
        try assertBreaks("bdl-5", bundle("collection", [#"{"fullUrl":"http://example.org/fhir/Patient/p1"}"#]))
    }

    // bdl-7: "FullUrl must be unique in a bundle, or else entries with the same fullUrl must have
    // different meta.versionId (except in history bundles)".
    func testFullUrlsAreUniqueExceptAcrossVersions() throws {
        try assertBreaks("bdl-7", bundle("collection", [patient + "}", patient + "}"]))
        let v1 = #"{"fullUrl":"http://example.org/fhir/Patient/p1","resource":{"resourceType":"Patient","id":"p1","meta":{"versionId":"1"}}}"#
        let v2 = #"{"fullUrl":"http://example.org/fhir/Patient/p1","resource":{"resourceType":"Patient","id":"p1","meta":{"versionId":"2"}}}"#
        XCTAssertEqual(try errors(bundle("collection", [v1, v2])), [])
    }

    // bdl-8: "fullUrl cannot be a version specific reference".
    func testAFullUrlIsNotVersionSpecific() throws {
        try assertBreaks("bdl-8", bundle("collection", [
            #"{"fullUrl":"http://example.org/fhir/Patient/p1/_history/2","resource":{"resourceType":"Patient","id":"p1"}}"#,
        ]))
    }

    // A fullUrl that is a RESTful URL "SHALL NOT disagree with the id in the resource".
    func testAFullUrlAgreesWithTheResourceID() throws {
        let found = try errors(bundle("collection", [#"{"fullUrl":"http://example.org/fhir/Patient/p2","resource":{"resourceType":"Patient","id":"p1"}}"#]))
        XCTAssertEqual(found.map(\.expression), ["Bundle.entry[0].fullUrl"])
    }

    // bdl-9, bdl-10, bdl-11: "A document must have an identifier with a system and a value", "a
    // date", and "a Composition as the first resource"; and a document is complete: its references
    // resolve within it.
    func testDocumentRules() throws {
        let composition = #"{"fullUrl":"urn:uuid:0c3151bd-1cbf-4d64-b04d-cd9187a4c6e0","resource":{"resourceType":"Composition","status":"final","type":{"text":"note"},"date":"2026-11-02","author":[{"reference":"urn:uuid:8b0a2e0f-3c1b-4ad4-a8a0-2b1f6f1d2c9a"}],"title":"Note","subject":{"reference":"urn:uuid:8b0a2e0f-3c1b-4ad4-a8a0-2b1f6f1d2c9a"}}}"#
        let author = #"{"fullUrl":"urn:uuid:8b0a2e0f-3c1b-4ad4-a8a0-2b1f6f1d2c9a","resource":{"resourceType":"Patient"}}"#
        let identified = #","identifier":{"system":"urn:ietf:rfc:3986","value":"urn:uuid:1b9a8f1e-9c55-4b5b-9c9f-6e3b1d1f0a11"},"timestamp":"2026-11-02T08:00:00Z""#
        XCTAssertEqual(try errors(bundle("document", [composition, author], more: identified)), [])
        try assertBreaks("bdl-9", bundle("document", [composition, author], more: #","timestamp":"2026-11-02T08:00:00Z""#))
        try assertBreaks("bdl-10", bundle("document", [composition, author], more: #","identifier":{"system":"urn:ietf:rfc:3986","value":"urn:uuid:1b9a8f1e-9c55-4b5b-9c9f-6e3b1d1f0a11"}"#))
        try assertBreaks("bdl-11", bundle("document", [author, composition], more: identified))
        let found = try errors(bundle("document", [composition], more: identified))
        XCTAssertTrue(found.contains { $0.diagnostics.contains("can't find") }, "a document's references resolve within it: \(found)")
    }

    // bdl-12: "A message must have a MessageHeader as the first resource".
    func testAMessageStartsWithItsHeader() throws {
        try assertBreaks("bdl-12", bundle("message", [patient + "}"]))
    }

    // The update interaction: "The request body SHALL be a Resource with an id element that has an
    // identical value to the [id] in the URL"; a create's body is a resource of the URL's type.
    func testATransactionEntrysRequestAgreesWithItsResource() throws {
        let put = #"{"fullUrl":"http://example.org/fhir/Patient/p1","resource":{"resourceType":"Patient","id":"p1"},"request":{"method":"PUT","url":"Patient/p1"}}"#
        XCTAssertEqual(try errors(bundle("transaction", [put])), [])
        let otherID = #"{"fullUrl":"urn:uuid:0c3151bd-1cbf-4d64-b04d-cd9187a4c6e0","resource":{"resourceType":"Patient","id":"p2"},"request":{"method":"PUT","url":"Patient/p1"}}"#
        XCTAssertEqual(try errors(bundle("transaction", [otherID])).map(\.expression), ["Bundle.entry[0].resource.id"])
        let otherType = #"{"fullUrl":"urn:uuid:0c3151bd-1cbf-4d64-b04d-cd9187a4c6e0","resource":{"resourceType":"Patient"},"request":{"method":"POST","url":"Observation"}}"#
        XCTAssertEqual(try errors(bundle("batch", [otherType])).map(\.expression), ["Bundle.entry[0].request.url"])
        // A conditional update names no id.
        let conditional = #"{"fullUrl":"urn:uuid:0c3151bd-1cbf-4d64-b04d-cd9187a4c6e0","resource":{"resourceType":"Patient"},"request":{"method":"PUT","url":"Patient?identifier=urn:x|1"}}"#
        XCTAssertEqual(try errors(bundle("transaction", [conditional])), [])
    }

    // "The fullUrl element SHALL have a value except that fullUrl can be empty on a POST": a warning,
    // since results of operations may hold unidentified resources.
    func testAnEntryWithoutFullUrlIsAWarningUnlessPosted() throws {
        let json = bundle("collection", [#"{"resource":{"resourceType":"Patient","id":"p1"}}"#])
        let issues = StructureValidator().validate(try FHIRJSON.read(Data(json.utf8))).issues
        XCTAssertEqual(issues.map(\.severity), [.warning])
        let posted = bundle("transaction", [#"{"resource":{"resourceType":"Patient"},"request":{"method":"POST","url":"Patient"}}"#])
        XCTAssertEqual(StructureValidator().validate(try FHIRJSON.read(Data(posted.utf8))).issues, [])
    }

    // search.html, "Search Result Bundles": a match is a resource of the server, so it has an id, and it is
    // of the type searched (`Patient?name=x`, or those of `_type`); an outcome is an OperationOutcome.
    func testASearchResultAgreesWithItsSearchMode() throws {
        func searchset(_ selfLink: String, _ entries: [String]) -> String {
            bundle("searchset", entries, more: #","link":[{"relation":"self","url":"\#(selfLink)"}]"#)
        }
        let match = #"{"fullUrl":"http://example.org/fhir/Patient/p1","resource":{"resourceType":"Patient","id":"p1"},"search":{"mode":"match"}}"#
        let include = #"{"fullUrl":"http://example.org/fhir/Organization/o1","resource":{"resourceType":"Organization","id":"o1","name":"Acme"},"search":{"mode":"include"}}"#
        let outcome = #"{"resource":{"resourceType":"OperationOutcome","issue":[{"severity":"information","code":"informational"}]},"search":{"mode":"outcome"}}"#
        XCTAssertEqual(try errors(searchset("http://example.org/fhir/Patient?name=x", [match, include, outcome])), [])
        XCTAssertEqual(try errors(searchset("http://example.org/fhir/Patient/_search", [match])), [])
        XCTAssertEqual(try errors(searchset("http://example.org/fhir?_type=Observation,Patient", [match])), [])
        // No self link, or one that does not say the type: the type is not judged.
        XCTAssertEqual(try errors(bundle("searchset", [match, include])), [])

        let noID = #"{"resource":{"resourceType":"Patient"},"search":{"mode":"match"}}"#
        XCTAssertEqual(try errors(searchset("http://example.org/fhir/Patient?name=x", [noID])).map(\.expression), ["Bundle.entry[0].resource"])
        let wrongType = try errors(searchset("http://example.org/fhir/Observation?code=x", [match]))
        XCTAssertEqual(wrongType.map(\.expression), ["Bundle.entry[0].resource"])
        XCTAssertTrue(wrongType.first?.diagnostics.contains("Observation") ?? false, "\(wrongType)")
        XCTAssertEqual(try errors(searchset("http://example.org/fhir?_type=Observation", [match])).count, 1)
        let notAnOutcome = #"{"fullUrl":"http://example.org/fhir/Patient/p1","resource":{"resourceType":"Patient","id":"p1"},"search":{"mode":"outcome"}}"#
        XCTAssertEqual(try errors(searchset("http://example.org/fhir/Patient?name=x", [notAnOutcome])).map(\.expression), ["Bundle.entry[0].resource"])
    }
}
