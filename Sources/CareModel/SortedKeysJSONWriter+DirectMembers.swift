import Foundation

/// The values ``SortedKeysJSONWriter`` writes member by member itself rather than through their
/// `encode(to:)`, byte for byte as that writes them, with the members in key order: a task version's
/// userInfo, provenance, schedule and schedule elements. Objects here are written
/// straight into the output, without a slot: their keys are known and already in order.
extension SortedKeysJSONWriter {
    /// Writes a `[String: String]` as its `encode(to:)` does (an object of its keys), in key order.
    func writeStringMap(_ map: [String: String]) {
        output.append(UInt8(ascii: "{"))
        var first = true
        for (key, value) in map.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
            writeKey(named: key, first: &first)
            writeString(value)
        }
        output.append(UInt8(ascii: "}"))
    }

    /// Writes `provenance` as its synthesized `encode(to:)` does (absent optionals left out), in key order.
    func writeProvenance(_ provenance: Provenance) throws {
        output.append(UInt8(ascii: "{"))
        var first = true
        if let contentHash = provenance.contentHash { writeKey("contentHash", first: &first); writeString(contentHash) }
        writeKey("fhirID", first: &first)
        writeString(provenance.fhirID)
        writeKey("fhirType", first: &first)
        writeString(provenance.fhirType)
        if let lastUpdated = provenance.lastUpdated {
            writeKey("lastUpdated", first: &first)
            try writeDouble(lastUpdated.timeIntervalSinceReferenceDate)
        }
        writeKey("sourceSystem", first: &first)
        writeString(provenance.sourceSystem)
        if let versionID = provenance.versionID { writeKey("versionID", first: &first); writeString(versionID) }
        output.append(UInt8(ascii: "}"))
    }

    /// Writes a schedule as its `encode(to:)` does (`{"elements":[...]}`), element by element: each
    /// long-running task version an import cuts has a schedule of its own, and looking schedules up by
    /// hash (their calendars and intervals hashed each time) cost more than writing them.
    func writeSchedule(_ schedule: Schedule) throws {
        appendASCII(#"{"elements":["#)
        for (index, element) in schedule.elements.enumerated() {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            try writeScheduleElement(element)
        }
        appendASCII("]}")
    }

    /// Writes a schedule element as its `encode(to:)` does, in key order; its calendar and interval as
    /// the last elements' with equal ones were written (``RecentEncodings``).
    func writeScheduleElement(_ element: ScheduleElement) throws {
        output.append(UInt8(ascii: "{"))
        var first = true
        writeKey("calendar", first: &first)
        try write(element.calendar)
        writeKey("duration", first: &first)
        try writeDuration(element.duration)
        if let end = element.end {
            writeKey("end", first: &first)
            try writeDouble(end.timeIntervalSinceReferenceDate)
        }
        writeKey("interval", first: &first)
        output.append(contentsOf: try Self.intervals.json(of: element.interval) { interval in
            let writer = SortedKeysJSONWriter()
            try writer.writeByEncoding(interval)
            return writer.unsupported ? [UInt8](try CareKitJSON.makeEncoder().encode(interval)) : writer.output
        })
        writeKey("start", first: &first)
        try writeDouble(element.start.timeIntervalSinceReferenceDate)
        writeKey("targetValues", first: &first)
        if element.targetValues.isEmpty { appendASCII("[]") } else { try write(element.targetValues) }
        if let text = element.text { writeKey("text", first: &first); writeString(text) }
        output.append(UInt8(ascii: "}"))
    }

    /// Schedule elements' intervals, most often one of a few (daily, every few hours). `DateComponents`'
    /// `==` takes an `isLeapMonth` of false for an absent one, which its `encode(to:)` writes and leaves
    /// out: that too must match.
    private static let intervals = RecentEncodings<DateComponents>(same: { $0 == $1 && $0.isLeapMonth == $1.isLeapMonth })

    /// Writes a schedule element's duration as its `encode(to:)` does.
    func writeDuration(_ duration: ScheduleElement.Duration) throws {
        switch duration {
        case .allDay: appendASCII(#"{"isAllDay":true}"#)
        case .seconds(let seconds):
            appendASCII(#"{"isAllDay":false,"seconds":"#)
            try writeDouble(seconds)
            output.append(UInt8(ascii: "}"))
        }
    }

    /// A key known when compiled (plain ASCII, nothing to escape) of a member of an object written
    /// directly, with its separator: copied, not escaped byte by byte.
    func writeKey(_ key: StaticString, first: inout Bool) {
        if !first { output.append(UInt8(ascii: ",")) }
        first = false
        output.append(UInt8(ascii: "\""))
        output.append(contentsOf: UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount))
        output.append(UInt8(ascii: "\""))
        output.append(UInt8(ascii: ":"))
    }

    /// The key of a member of an object written directly (not through a slot), with its separator.
    func writeKey(named key: String, first: inout Bool) {
        if !first { output.append(UInt8(ascii: ",")) }
        first = false
        writeString(key)
        output.append(UInt8(ascii: ":"))
    }
}
