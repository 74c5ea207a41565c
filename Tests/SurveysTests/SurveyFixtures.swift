import Foundation
import TestSupport

/// The survey fixtures (Fixtures/surveys), named.
enum SurveyFixtures {
    static let folder = Corpus.projectRoot.appendingPathComponent("Fixtures/surveys")
    /// SDC's PHQ-9 example (CC0, source in Fixtures/surveys/README.md).
    static let sdcPHQ9 = folder.appendingPathComponent("questionnaire-sdc-profile-example-PHQ9.json")
}
