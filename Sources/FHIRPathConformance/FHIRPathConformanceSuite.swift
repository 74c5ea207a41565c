import CLibXML2
import FHIRCore
import FHIRPath
import Foundation

/// The official FHIRPath test suite (`tests-fhir-r4.xml`): its groups and tests, and a runner that
/// evaluates each test as the suite intends (`mode="strict"`, `invalid=`, `predicate`, unordered
/// outputs) and says why a test failed.
///
/// ```swift
/// let suite = try FHIRPathConformanceSuite(contentsOf: url)   // inputs are read from url's folder
/// let results = suite.run()
/// print("\(results.filter(\.passed).count) passed")
/// ```
public struct FHIRPathConformanceSuite: Sendable {
    /// One expected output item: its value as the suite writes it, and its type when given.
    public struct Output: Sendable {
        /// The expected type (`boolean`, `code`, `Quantity`...), when given.
        public let type: String?
        public let value: String
    }

    /// One `<test>` of the suite.
    public struct Test: Sendable {
        public let group: String
        public let name: String
        public let inputFile: String?
        public let expression: String
        /// `syntax`, `semantic`, `execution` (or any non-empty word): the expression must fail.
        public let invalid: String?
        /// `strict` applies the static checks that are errors only in strict mode.
        public let isStrict: Bool
        public let checkOrderedFunctions: Bool
        /// `predicate="true"`: the result is read as a Boolean (exists).
        public let predicate: Bool
        public let ordered: Bool
        public let outputs: [Output]
    }

    /// The outcome of one test.
    public struct Result: Sendable {
        public let test: Test
        public let passed: Bool
        /// Why the test failed; nil when it passed.
        public let reason: String?
    }

    public let folder: URL
    public let tests: [Test]

    /// The tests of the R4 suite that fail for documented reasons (Tests/FHIRTests/FHIRPathKnownFailures.md
    /// explains each), by name.
    public static let knownFailures: [String: String] = [
        "LowBoundaryDecimal15": "Foundation's Decimal has no negative zero",
        "testPrimitiveExtensions": "its input file is not valid FHIR JSON (_given does not align with given)",
    ]

    /// Reads the suite; its input files are looked up beside it.
    public init(contentsOf url: URL) throws {
        folder = url.deletingLastPathComponent()
        tests = try Self.parse(Data(contentsOf: url), file: url.lastPathComponent)
    }

    /// The group names in suite order.
    public var groups: [String] {
        var seen = Set<String>(), order: [String] = []
        for test in tests where seen.insert(test.group).inserted { order.append(test.group) }
        return order
    }

    // MARK: Reading the suite file

    private static func parse(_ data: Data, file: String) throws -> [Test] {
        let document: xmlDocPtr? = data.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress?.assumingMemoryBound(to: CChar.self) else { return nil }
            // libxml2 would print its own parser errors on standard error: the error below says it instead.
            return xmlReadMemory(
                base, Int32(bytes.count), file, "UTF-8",
                Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue))
        }
        guard let document, let root = xmlDocGetRootElement(document) else {
            throw FHIRSyntaxError(format: .xml, line: 1, column: 1, message: "\(file) is not a well-formed test suite")
        }
        defer { xmlFreeDoc(document) }
        var tests: [Test] = []
        for group in elementChildren(root) where name(group) == "group" {
            let groupName = attribute(group, "name") ?? "?"
            for test in elementChildren(group) where name(test) == "test" {
                guard let expressionNode = elementChildren(test).first(where: { name($0) == "expression" }) else { continue }
                let outputs = elementChildren(test).filter { name($0) == "output" }.map {
                    Output(type: attribute($0, "type"), value: content($0))
                }
                let mode = attribute(test, "mode") ?? attribute(expressionNode, "mode")
                tests.append(Test(
                    group: groupName,
                    name: attribute(test, "name") ?? "(unnamed)",
                    inputFile: attribute(test, "inputfile"),
                    expression: content(expressionNode),
                    invalid: attribute(expressionNode, "invalid"),
                    isStrict: mode == "strict",
                    checkOrderedFunctions: attribute(test, "checkOrderedFunctions") == "true",
                    predicate: attribute(test, "predicate") == "true",
                    ordered: attribute(test, "ordered") != "false",
                    outputs: outputs
                ))
            }
        }
        guard !tests.isEmpty else {
            throw FHIRSyntaxError(format: .xml, line: 1, column: 1, message: "\(file) is not the FHIRPath test suite (no <group> holds a <test>)")
        }
        return tests
    }

    private static func elementChildren(_ node: xmlNodePtr) -> [xmlNodePtr] {
        var result: [xmlNodePtr] = []
        var child = node.pointee.children
        while let current = child {
            if current.pointee.type == XML_ELEMENT_NODE { result.append(current) }
            child = current.pointee.next
        }
        return result
    }

    private static func name(_ node: xmlNodePtr) -> String {
        node.pointee.name.map { String(cString: $0) } ?? ""
    }

    private static func attribute(_ node: xmlNodePtr, _ attributeName: String) -> String? {
        guard let value = xmlGetProp(node, attributeName) else { return nil }
        defer { free(value) }
        return String(cString: value)
    }

    private static func content(_ node: xmlNodePtr) -> String {
        guard let value = xmlNodeGetContent(node) else { return "" }
        defer { free(value) }
        return String(cString: value)
    }

    // MARK: Running

    /// Runs every test (inputs are read once each).
    public func run(metadata: FHIRMetadata = .r4) -> [Result] {
        var inputs: [String: Swift.Result<Element, Error>] = [:]
        return tests.map { test in
            var input: Element?
            if let file = test.inputFile {
                if inputs[file] == nil { inputs[file] = Swift.Result { try Self.readInput(folder.appendingPathComponent(file)) } }
                switch inputs[file] {
                case .success(let element)?: input = element
                case .failure(let error)?: return Self.Result(test: test, passed: false, reason: "cannot read \(file): \(error)")
                case nil: break
                }
            }
            return run(test, input: input, metadata: metadata)
        }
    }

    static func readInput(_ url: URL) throws -> Element {
        try FHIRDocument.read(FHIRInput.data(of: .file(url.path))).singleResource()
    }

    private func run(_ test: Test, input: Element?, metadata: FHIRMetadata) -> Result {
        func result(_ passed: Bool, _ reason: String?) -> Result { Result(test: test, passed: passed, reason: passed ? nil : reason) }
        let expression: FHIRPathExpression
        do {
            expression = try FHIRPathExpression(test.expression)
        } catch {
            return result(test.invalid != nil, "unexpected \(error)")
        }
        if let type = input?.resourceType {
            let options = FHIRPathStaticChecker.Options(strict: test.isStrict, checkOrderedFunctions: test.checkOrderedFunctions)
            let problems = expression.check(startingType: type, options: options, metadata: metadata).errors
            if let first = problems.first {
                return result(test.invalid != nil, "static check: \(first)")
            }
        }
        let values: [FHIRPathValue]
        do {
            let environment = FHIRPathEnvironment(metadata: metadata)
            if let input {
                values = try expression.evaluate(on: input, environment: environment)
            } else {
                values = try expression.evaluate(context: [], resource: nil, rootResource: nil, environment: environment)
            }
        } catch {
            return result(test.invalid != nil, "unexpected \(error)")
        }
        if let invalid = test.invalid {
            return result(false, "expected a \(invalid) error, got \(Self.show(values))")
        }
        let actual = test.predicate ? [FHIRPathValue.boolean(!values.isEmpty)] : values
        guard actual.count == test.outputs.count else {
            return result(false, "expected \(test.outputs.count) item(s) \(Self.show(test.outputs)), got \(Self.show(actual))")
        }
        var remaining = Array(actual)
        for (index, expected) in test.outputs.enumerated() {
            let matches: (FHIRPathValue) -> Bool = { value in
                (expected.type == nil || expected.type == value.typeName) && value.description == expected.value
            }
            if test.ordered {
                if !matches(actual[index]) {
                    return result(false, "item \(index): expected \(Self.show([expected])), got \(Self.show([actual[index]]))")
                }
            } else if let position = remaining.firstIndex(where: matches) {
                remaining.remove(at: position)
            } else {
                return result(false, "expected \(Self.show(test.outputs)), got \(Self.show(actual))")
            }
        }
        return result(true, nil)
    }

    static func show(_ values: [FHIRPathValue]) -> String {
        "[" + values.map { "\($0.typeName) \($0.description)" }.joined(separator: ", ") + "]"
    }

    static func show(_ outputs: [Output]) -> String {
        "[" + outputs.map { "\($0.type ?? "?") \($0.value)" }.joined(separator: ", ") + "]"
    }
}
