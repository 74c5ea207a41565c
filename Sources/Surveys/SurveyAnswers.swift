import Foundation

/// An outcome's answers, typed by their items and placed in the Questionnaire: what the checker makes
/// of an app's outcome values and what the response builder writes out.
public struct SurveyAnswers: Sendable, Equatable {
    /// One item instance: the item's linkId and, for each repeating group above it (outermost first),
    /// which repetition it is in.
    public struct Key: Hashable, Sendable, CustomStringConvertible {
        public var linkId: String
        public var repetitions: [Int]

        public init(linkId: String, repetitions: [Int] = []) {
            self.linkId = linkId
            self.repetitions = repetitions
        }

        /// The outcome value `kind` that names this instance, given the repeating groups above it.
        public var description: String { linkId + (repetitions.isEmpty ? "" : " \(repetitions)") }
    }

    /// One answer: a typed value, or ResearchKit's "I don't know" (`asked-unknown`).
    public enum Answer: Hashable, Sendable {
        case value(AnswerValue)
        case askedUnknown

        public var value: AnswerValue? {
            if case .value(let value) = self { return value }
            return nil
        }
    }

    /// The answers of each item instance, in the order the outcome gave them.
    public var answers: [Key: [Answer]]

    public init(answers: [Key: [Answer]] = [:]) {
        self.answers = answers
    }

    /// The typed values of an instance (without "I don't know").
    public func values(_ key: Key) -> [AnswerValue] {
        (answers[key] ?? []).compactMap(\.value)
    }

    /// True when any instance at or under `repetitions` of the repeating groups has an answer for one of
    /// `linkIds`.
    func hasAnswers(among linkIds: Set<String>, within repetitions: [Int]) -> Bool {
        answers.contains { key, answers in
            !answers.isEmpty && linkIds.contains(key.linkId) && key.repetitions.starts(with: repetitions)
        }
    }
}

/// The text an app sends for ResearchKit's "I don't know": the item exports with no answer and the
/// `data-absent-reason` extension `asked-unknown`.
public let askedUnknownText = "asked-unknown"
