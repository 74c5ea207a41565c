import Foundation

/// Prometheus's text exposition format, read back for the tests of `/metrics`: each sample's name, labels
/// and value.
public struct PrometheusText {
    public struct Sample: Equatable {
        public var name: String
        public var labels: [String: String]
        public var value: Double
    }

    public let samples: [Sample]

    public init(_ text: String) {
        var samples: [Sample] = []
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            let series = line[..<space]
            var labels: [String: String] = [:]
            var name = String(series)
            if let open = series.firstIndex(of: "{"), series.hasSuffix("}") {
                name = String(series[..<open])
                let inner = series[series.index(after: open)..<series.index(before: series.endIndex)]
                // Label values here never hold a comma or a quote (routes, types, states).
                for pair in inner.split(separator: ",") {
                    let parts = pair.split(separator: "=", maxSplits: 1)
                    guard parts.count == 2 else { continue }
                    labels[String(parts[0])] = String(parts[1]).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                }
            }
            samples.append(Sample(name: name, labels: labels, value: value))
        }
        self.samples = samples
    }

    /// The value of the sample `name` whose labels include `labels`, summed over the others' values.
    public func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        let matching = samples.filter { sample in sample.name == name && labels.allSatisfy { key, value in sample.labels[key] == value } }
        return matching.isEmpty ? nil : matching.reduce(0) { $0 + $1.value }
    }
}
