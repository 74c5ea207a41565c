import FHIR
@testable import Mapping
import XCTest

/// The resource types an import keeps: those a mapping can read, found from the mapping files.
final class ReadableTypesTests: XCTestCase {
    private func reached(_ text: String) throws -> Set<String>? {
        try FHIRPathExpression(text).typesReachedByResolve
    }

    func testTheTypeAfterEachResolveIsReached() throws {
        XCTAssertEqual(try reached("subject.resolve() is Patient"), ["Patient"])
        XCTAssertEqual(try reached("goal.resolve().ofType(Goal).target | medication.resolve() .ofType( FHIR.Medication ).code"), ["Goal", "Medication"])
        XCTAssertEqual(try reached("subject.where(resolve() as Patient).exists()"), ["Patient"])
        XCTAssertEqual(try reached("code.text"), [])
        // Read from the parsed expression, not its text: spacing and a string that mentions resolve() are no calls.
        XCTAssertEqual(try reached("subject.resolve ( ) is Patient"), ["Patient"])
        XCTAssertEqual(try reached("code.text = 'resolve()'"), [])
    }

    func testAResolveFollowedByNoTypeCanReachAnyType() throws {
        XCTAssertNil(try reached("subject.resolve().name"))
        XCTAssertNil(try reached("subject.resolve().ofType(Patient) | performer.resolve()"))
        XCTAssertNil(try reached("subject.resolve().ofType(HumanName)"), "not a resource type")
        XCTAssertNil(try reached("subject.resolve ( ).name"))
        XCTAssertNil(try reached("subject.resolve().ofType(System.String)"), "not a FHIR type")
    }

    func testTheDefaultsReadTheirOwnTypesWhatTheyResolveAndWhatReverseFieldsRead() throws {
        let types = try XCTUnwrap(try MappingSet.defaults().readableTypes)
        for type in ["Patient", "CarePlan", "MedicationRequest", "Observation", "Practitioner", "PractitionerRole", "RelatedPerson",
                     "Goal", "ServiceRequest", "Medication", "CareTeam", "Organization", "AllergyIntolerance", "Encounter"] {
            XCTAssertTrue(types.contains(type), type)
        }
        // Encounters are read for the care team's members (Patient.yaml); what no mapping reads is not kept.
        for type in ["Claim", "ExplanationOfBenefit", "DocumentReference", "Procedure"] {
            XCTAssertFalse(types.contains(type), type)
        }
    }

    func testAUserMappingWithAnUntypedResolveKeepsEverything() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("readable-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try """
            resource: Procedure
            entities:
              - entity: task
                fields:
                  title: code.text | encounter.resolve().type.text
            """.write(to: folder.appendingPathComponent("Procedure.yaml"), atomically: true, encoding: .utf8)
        let (set, problems, _) = try MappingSet.layered(folder: folder.path)
        XCTAssertEqual(problems.filter { $0.severity == .error }.map(\.message), [])
        XCTAssertNil(set.readableTypes)
    }
}
