import CareModel
import Foundation
import XCTest

/// The hand-written UUID text must be Foundation's, both ways.
final class UUIDTextTests: XCTestCase {
    func testTheTextIsFoundationsAndReadsBack() {
        var generator = SystemRandomNumberGenerator()
        var uuids = (0..<500).map { _ in UUID() }
        uuids.append(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
        uuids.append(UUID(uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255)))
        for _ in 0..<100 {
            let byte = { UInt8.random(in: 0...255, using: &generator) }
            uuids.append(UUID(uuid: (byte(), byte(), byte(), byte(), byte(), byte(), byte(), byte(), byte(), byte(), byte(), byte(), byte(), byte(), byte(), byte())))
        }
        for uuid in uuids {
            XCTAssertEqual(uuid.canonicalString, uuid.uuidString)
            XCTAssertEqual(UUID(canonical: uuid.uuidString), uuid)
            XCTAssertEqual(UUID(canonical: uuid.uuidString.lowercased()), uuid)
            XCTAssertEqual(UUID(canonical: Substring("x" + uuid.uuidString).dropFirst()), uuid)
        }
    }

    func testWhatFoundationRefusesIsRefusedAndAStrayDashToo() {
        let samples = [
            "", "E621E1F8-C36C-495A-93FC-0C247A3E6E5", "E621E1F8-C36C-495A-93FC-0C247A3E6E5F0",
            "E621E1F8C36C-495A-93FC-0C247A3E6E5F0", "E621E1F8-C36C-495A-93FC_0C247A3E6E5F", "G621E1F8-C36C-495A-93FC-0C247A3E6E5F",
            "E621E1F8-C36C-495A-93FC-0C247A3E6E5 ", "{E621E1F8-C36C-495A-93FC-0C247A3E6E5}", "e621e1f8-c36c-495a-93fc-0c247a3e6e5f",
            "E621E1F8-C36C-495A-93FC-0C247A3E6E5F", "E621E1F8-C36C-495A-93FC-0C247A3E6E5é",
        ]
        for sample in samples {
            XCTAssertEqual(UUID(canonical: sample), UUID(uuidString: sample), sample)
        }
        // Stricter where Foundation reads a dash as a digit.
        XCTAssertNil(UUID(canonical: "E621E1F8-C36C-495A-93FC--C247A3E6E5F"))
    }
}
