import Foundation

/// A value with a label, e.g. a phone number labelled "work" (CareKit `OCKLabeledValue`).
public struct LabeledValue: Sendable, Hashable, Codable {
    public var label: String
    public var value: String

    public init(label: String, value: String) {
        self.label = label
        self.value = value
    }
}
