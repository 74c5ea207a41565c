import Foundation

/// A schema version (CareKit `OCKSemanticVersion`): major.minor.patch.
public struct SemanticVersion: Sendable, Hashable, Codable, Comparable {
    public var majorVersion: Int
    public var minorVersion: Int
    public var patchNumber: Int

    public init(majorVersion: Int, minorVersion: Int, patchNumber: Int) {
        self.majorVersion = majorVersion
        self.minorVersion = minorVersion
        self.patchNumber = patchNumber
    }

    public static func < (lhs: SemanticVersion, rhs: SemanticVersion) -> Bool {
        (lhs.majorVersion, lhs.minorVersion, lhs.patchNumber) < (rhs.majorVersion, rhs.minorVersion, rhs.patchNumber)
    }
}
