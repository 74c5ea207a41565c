import Mapping
import XCTest

/// `members:` rules (a care team, Docs/care-team.md) are checked as every other part of a mapping:
/// each problem once, at its line and column, against R4.
final class MemberRuleCheckTests: XCTestCase {
    private func problems(_ yaml: String) -> [String] {
        MappingSet.load(files: [(name: "team.yaml", text: yaml)]).1.map { "\($0.location.line):\($0.location.column) \($0.message)" }
    }

    private func team(_ rules: String, kind: String = "contact", fields: String = "category: { value: careProvider }") -> String {
        """
        resource: Patient
        entities:
          - entity: \(kind)
            name: careteam
            members:
        \(rules)
            fields:
              \(fields)
        """
    }

    func testASoundRuleHasNoProblems() {
        XCTAssertEqual(problems(team("""
              - reason: encounter
                reverse: Encounter
                on: subject
                when: status = 'finished'
                from: participant.individual
                seen: period.end | period.start
                window: 18 months
                window-end: latest
        """, fields: "role: \"%roles.code.text\"")), [])
    }

    func testEachPartOfARuleIsCheckedAgainstR4() {
        let found = problems(team("""
              - reason: encounter
                reverse: Encounter
                on: subject
                from: participant.individul
                seen: period
                window: 2 fortnights
        """, fields: "role: \"%roles.cod.text\""))
        XCTAssertTrue(found.contains { $0.hasPrefix("9:") && $0.contains("'individul'") && $0.contains("did you mean 'individual'") }, "\(found)")
        XCTAssertTrue(found.contains { $0.hasPrefix("10:") && $0.contains("`seen` takes a date or dateTime") }, "\(found)")
        XCTAssertTrue(found.contains { $0.hasPrefix("11:") && $0.contains("2 fortnights") }, "\(found)")
        XCTAssertTrue(found.contains { $0.hasPrefix("13:") && $0.contains("PractitionerRole has no element 'cod'") }, "\(found)")
    }

    func testARuleNeedsAReasonAndReferencesAndMembersMakeContacts() {
        XCTAssertTrue(problems(team("      - from: generalPractitioner")).contains { $0.contains("needs `reason:`") })
        XCTAssertTrue(problems(team("      - reason: gp\n        from: gender")).contains { $0.contains("takes a Reference (or a resource), but `gender` gives code") })
        XCTAssertTrue(problems(team("      - reason: gp\n        from: generalPractitioner", kind: "task", fields: "title: \"'x'\"")).contains { $0.contains("belongs to an entity `contact`") })
        XCTAssertTrue(problems(team("      - reason: gp\n        from: generalPractitioner\n        window-end: someday")).contains { $0.contains("`window-end:` is `run`") })
    }
}
