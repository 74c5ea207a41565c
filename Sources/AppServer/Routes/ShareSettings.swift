import Foundation
import Insights

/// How `POST /carekit/v1/shares` makes the report a share carries (Docs/sharing.md).
public struct ShareSettings: Sendable {
    /// Names the program in the report's header and the share's Provenance (`CareGate 0.1.0`).
    public var generator: String
    /// Prints a report to PDF (`caregate serve` gives headless Chromium's, when it finds it). Without
    /// one, a report share carries the report's HTML (`text/html`), which a clinician's system shows too.
    public var printPDF: (@Sendable (CareTeamReport) throws -> Data)?

    public init(generator: String = "CareGate", printPDF: (@Sendable (CareTeamReport) throws -> Data)? = nil) {
        self.generator = generator
        self.printPDF = printPDF
    }
}
