import Foundation

/// What links a task to HealthKit (CareKit 4.0's `OCKHealthKitLinkage`): the quantity type whose samples
/// are the task's outcomes, how HealthKit aggregates it, and the unit its values are read in.
///
/// A task with a linkage is served as CareKit's `OCKHealthKitTask` (entity type `healthKitTask`): the app
/// fills its events in from HealthKit samples and never syncs their outcomes. Coded exactly as CareKit
/// 4.0's synthesized Codable (CareKitStore/CareKitStore/Structs/OCKHealthKitLinkage.swift at tag 4.0.0):
///
/// ```json
/// {"quantityIdentifier": "HKQuantityTypeIdentifierBodyMass", "quantityType": "discrete", "unitString": "kg"}
/// ```
///
/// `quantityIdentifier` is `HKQuantityTypeIdentifier`'s raw value (a `RawRepresentable` string, Codable
/// as its raw value); `unitString` is `HKUnit.unitString`, HealthKit's unit syntax (`count/min`, `mmHg`,
/// `degC`), not UCUM. All three are required by CareKit's decoder.
public struct HealthKitLinkage: Sendable, Hashable, Codable {
    /// `OCKHealthKitLinkage.QuantityType`: how HealthKit aggregates the samples of a type.
    public enum QuantityType: String, Sendable, Hashable, Codable, CaseIterable {
        /// Samples add up over an event (steps, distance, energy).
        case cumulative
        /// Each sample stands alone (weight, heart rate, blood pressure).
        case discrete
    }

    /// The `HKQuantityTypeIdentifier` raw value (`HKQuantityTypeIdentifierBodyMass`).
    public var quantityIdentifier: String
    public var quantityType: QuantityType
    /// The unit in HealthKit's syntax (`HKUnit(from:)`): `kg`, `count/min`, `mmHg`, `degC`, `%`.
    public var unitString: String

    public init(quantityIdentifier: String, quantityType: QuantityType, unitString: String) {
        self.quantityIdentifier = quantityIdentifier
        self.quantityType = quantityType
        self.unitString = unitString
    }
}
