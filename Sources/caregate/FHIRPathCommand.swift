import ArgumentParser
import CommandSupport
import FHIR
import Foundation

/// `caregate fhirpath`: evaluates a FHIRPath expression over a resource file, or type-checks it against
/// the R4 metadata without data (`--check`).
struct FHIRPathCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fhirpath",
        abstract: "Evaluate or type-check a FHIRPath expression.",
        discussion: """
            Prints the result, one `type<TAB>value` per line, for a JSON or XML file; with --check, type-checks \
            the expression against R4 from --type, without a file. Errors name their line and column in the \
            expression. Exit status: 0 on success, 1 when the expression, file or check fails, 2 on bad usage.

            Examples:
              caregate fhirpath "Observation.value.ofType(Quantity).value" obs.json
              caregate fhirpath "name.where(use = %use).given" pt.xml --var use=official
              caregate fhirpath --check "activity.detail.scheduled" --type CarePlan

            More: Docs/converting.md (FHIRPath).
            """
    )

    @Argument(help: "The FHIRPath expression.")
    var expression: String

    @Argument(help: "The resource file (JSON or XML); not used with --check.")
    var file: String?

    @Flag(name: .long, help: "Type-check the expression against the R4 metadata instead of evaluating it.")
    var check = false

    @Option(name: .long, help: "With --check: the type the expression starts from, e.g. CarePlan.")
    var type: String?

    @Flag(name: .long, help: "With --check: report only what is an error in lenient evaluation.")
    var lenient = false

    @Option(name: .customLong("var"), help: ArgumentHelp("A variable for the expression, as name=value (repeatable); used as %name.", valueName: "name=value"))
    var variables: [String] = []

    func validate() throws {
        if check {
            guard let type else { throw ValidationError("--check needs --type, e.g. --type CarePlan") }
            guard FHIRMetadata.r4.type(named: type) != nil else {
                throw ValidationError("unknown type '\(type)': give an R4 resource or datatype name")
            }
            guard file == nil else { throw ValidationError("--check reads no file; remove \(file ?? "")") }
        } else {
            guard let file else { throw ValidationError("give a resource file to evaluate against (or --check --type T)") }
            guard FileManager.default.fileExists(atPath: file) else { throw ValidationError("no such file: \(file)") }
            guard type == nil else { throw ValidationError("--type is used only with --check") }
        }
        for variable in variables where !variable.contains("=") || variable.hasPrefix("=") {
            throw ValidationError("--var expects name=value, got '\(variable)'")
        }
    }

    private var variableValues: [String: String] {
        var result: [String: String] = [:]
        for variable in variables {
            guard let equals = variable.firstIndex(of: "=") else { continue }
            result[String(variable[..<equals])] = String(variable[variable.index(after: equals)...])
        }
        return result
    }

    func run() throws {
        let compiled: FHIRPathExpression
        do {
            compiled = try FHIRPathExpression(expression)
        } catch {
            throw CommandFailure("error: \(error)")
        }
        if check {
            let options = FHIRPathStaticChecker.Options(strict: !lenient, variables: Set(variableValues.keys))
            let report = compiled.check(startingType: type ?? "Resource", options: options)
            guard report.errors.isEmpty else { throw CommandFailure(report.errors.map { "\($0)" }.joined(separator: "\n")) }
            print("result type: \(report.resultType)")
            return
        }
        let source = FHIRInput.Source.file(file ?? "")
        let resource: Element
        do {
            resource = try FHIRDocument.read(FHIRInput.data(of: source)).singleResource()
        } catch {
            throw CommandFailure("error: \(source):\(error is FHIRSyntaxError ? "" : " ")\(error)")
        }
        let result: [FHIRPathValue]
        do {
            result = try compiled.evaluate(on: resource, environment: FHIRPathEnvironment(
                variables: variableValues.mapValues { [.string($0)] },
                trace: { name, values in
                    printError("trace \(name): " + values.map { "\($0.typeName) \($0.description)" }.joined(separator: ", "))
                }))
        } catch {
            throw CommandFailure("error: \(error)")
        }
        if result.isEmpty { printError("(empty collection)") }
        for item in result { print("\(item.typeName)\t\(item.description)") }
    }
}
