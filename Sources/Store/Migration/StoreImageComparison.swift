import CareModel
import Foundation

/// Compares two stores' images record by record, section by section, reading both a page at a time.
///
/// A difference is named by section, record number, field and (where it names no patient) the record's
/// id or version uuid; never by a value, which may be patient data.
public struct StoreImageComparison: Sendable {
    /// The first difference found.
    public struct Difference: Error, Sendable, CustomStringConvertible {
        public var section: StoreImageSection
        /// 1 for the first record of the section.
        public var record: Int
        public var explanation: String

        public var description: String { "\(section.title), record \(record): \(explanation)" }
    }

    /// Records compared per section, in section order.
    public private(set) var counts: [(section: StoreImageSection, records: Int)] = []

    public init() {}

    /// Compares `source` with `target`, section by section; throws the first ``Difference``.
    /// `progress` hears each section compared and its count.
    public mutating func compare(
        _ source: any StoreImageReader, _ target: any StoreImageReader,
        sections: [StoreImageSection] = StoreImageSection.allCases, progress: (StoreImageSection, Int) -> Void = { _, _ in }
    ) async throws {
        counts = []
        for section in sections {
            let count = try await Self.compare(section, source, target)
            counts.append((section, count))
            progress(section, count)
        }
    }

    private static func compare(_ section: StoreImageSection, _ source: any StoreImageReader, _ target: any StoreImageReader) async throws -> Int {
        var left = Buffered(reader: source, section: section)
        var right = Buffered(reader: target, section: section)
        var number = 0
        while true {
            let a = try await left.next()
            let b = try await right.next()
            switch (a, b) {
            case (nil, nil): return number
            case (nil, .some):
                throw Difference(section: section, record: number + 1, explanation: "the target has more records than the source (\(number))")
            case (.some, nil):
                throw Difference(section: section, record: number + 1, explanation: "the target has only \(number) records, fewer than the source")
            case (let a?, let b?):
                number += 1
                if let explanation = difference(section, a, b) {
                    throw Difference(section: section, record: number, explanation: explanation)
                }
            }
        }
    }

    /// What differs between two records of `section`, or `nil` when they are equal.
    public static func difference(_ section: StoreImageSection, _ a: StoreImageRecord, _ b: StoreImageRecord) -> String? {
        let fields = section.fields
        guard a.values.count == fields.count, b.values.count == fields.count else {
            return "the records have \(a.values.count) and \(b.values.count) fields, not \(fields.count)"
        }
        for (index, field) in fields.enumerated() where !equal(a[index], b[index], field.kind) {
            return "\(field.name) differs (\(describe(a[index], b[index])))\(label(section, a))"
        }
        return nil
    }

    /// Whether two values of a field of `kind` are equal: exactly, numbers to the bit.
    static func equal(_ a: StoreImageValue, _ b: StoreImageValue, _ kind: StoreImageField.Kind) -> Bool {
        if case .real(let x) = a, case .real(let y) = b { return x.bitPattern == y.bitPattern }
        return a == b
    }

    /// The record's id or version uuid, when it has one that names no patient.
    private static func label(_ section: StoreImageSection, _ record: StoreImageRecord) -> String {
        if case .entity(let entity) = record[0] { return ", version \(entity.metadata.uuid.uuidString)" }
        switch section {
        case .outbox, .deadLetters, .audit, .syncRuns: return record[0].integer.map { ", id \($0)" } ?? ""
        default: return ""
        }
    }

    /// The kinds of the two values, or for two entities the first of their JSON fields that differs.
    private static func describe(_ a: StoreImageValue, _ b: StoreImageValue) -> String {
        if case .entity(let x) = a, case .entity(let y) = b { return entityDifference(x, y) }
        if a.typeName != b.typeName { return "\(a.typeName) in the source, \(b.typeName) in the target" }
        return "another \(a.typeName) in the target"
    }

    /// The first top-level field (or metadata field) of two entity versions' JSON that differs.
    static func entityDifference(_ a: CareEntity, _ b: CareEntity) -> String {
        guard a.kind == b.kind else { return "a \(a.kind) in the source, a \(b.kind) in the target" }
        func object(_ entity: CareEntity) -> [String: Any] {
            guard let data = try? CareKitJSON.encode(entity),
                let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
            else { return [:] }
            return object
        }
        let (x, y) = (object(a), object(b))
        for key in Set(x.keys).union(y.keys).sorted() {
            let left = x[key].map { "\($0)" }
            let right = y[key].map { "\($0)" }
            if left != right { return "its field \(key) differs" }
        }
        return "a value its JSON does not show differs (a date's last digits, or a time zone)"
    }
}

/// A reader's records of one section, one at a time, a page read whenever the last one is used up.
private struct Buffered {
    let reader: any StoreImageReader
    let section: StoreImageSection
    var records: [StoreImageRecord] = []
    var index = 0
    var cursor: StoreImageCursor?
    var done = false

    init(reader: any StoreImageReader, section: StoreImageSection) {
        self.reader = reader
        self.section = section
    }

    mutating func next() async throws -> StoreImageRecord? {
        while index == records.count {
            if done { return nil }
            let page = try await reader.page(section, after: cursor, limit: StoreImage.pageSize(section))
            records = page.records
            index = 0
            cursor = page.next
            done = page.next == nil
        }
        defer { index += 1 }
        return records[index]
    }
}
