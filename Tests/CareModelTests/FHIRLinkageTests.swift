import CareModel
import XCTest

/// The FHIR linkage of an entity has one encoding in CareKit's userInfo, owned by FHIRLinkage.
final class FHIRLinkageTests: XCTestCase {
    func testTheLinkageRoundTripsThroughUserInfoBesideOtherKeys() {
        var metadata = EntityMetadata(effectiveDate: Date(timeIntervalSince1970: 0))
        metadata.userInfo = ["status": "active"]
        var linkage = FHIRLinkage()
        linkage.codes = ["http://loinc.org|8867-4", "http://snomed.info/sct|364075005"]
        linkage.patientID = "Patient/p1"
        linkage.outcomeReferences = [ResourceKey(type: "Observation", id: "o1")]
        linkage.valueSources = [ResourceKey(type: "Observation", id: "o1"), ResourceKey(type: "Observation", id: "o2")]
        linkage.elementPath = "CarePlan.activity[1]"
        metadata.linkage = linkage
        XCTAssertEqual(metadata.linkage, linkage)
        XCTAssertEqual(metadata.userInfo?["status"], "active", "other keys are kept")
        XCTAssertEqual(metadata.userInfo?["fhir.codes"], "http://loinc.org|8867-4\nhttp://snomed.info/sct|364075005", "the stored shape")
        XCTAssertEqual(metadata.userInfo?["fhir.valueSources"], "Observation/o1\nObservation/o2")
    }

    func testAnEmptyLinkageLeavesNoKeysAndNoUserInfo() {
        var metadata = EntityMetadata(effectiveDate: Date(timeIntervalSince1970: 0))
        metadata.linkage = FHIRLinkage()
        XCTAssertNil(metadata.userInfo)
        metadata.userInfo = ["fhir.patient": "Patient/p1"]
        metadata.linkage.patientID = nil
        XCTAssertNil(metadata.userInfo, "nothing left")
    }

    func testAValueSourceWithoutAnIdKeepsItsPlace() {
        let linkage = FHIRLinkage(userInfo: ["fhir.valueSources": "Observation/o1\nQuestionnaireResponse"])
        XCTAssertEqual(linkage.valueSources, [ResourceKey(type: "Observation", id: "o1"), ResourceKey(type: "QuestionnaireResponse", id: "")])
    }
}
