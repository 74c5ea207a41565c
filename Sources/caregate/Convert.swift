import ArgumentParser
import CommandSupport
import FHIR
import FileSafety
import Foundation
import Pipeline

/// `caregate convert`: FHIR JSON, NDJSON and XML to each other, over ``FHIRFormat/convert(_:to:pretty:)``.
struct Convert: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "convert",
        abstract: "Convert FHIR R4 resources between JSON and XML, or to CareKit JSON.",
        discussion: """
            The input format is told from the content (JSON, NDJSON, XML); without --to the output is the other \
            one, or the -o file's extension. NDJSON has no XML form: it becomes one `collection` Bundle. --to \
            carekit maps the input to CareKit 4.0 JSON, with no store. Nothing is written unless the whole \
            conversion succeeds; errors name FILE:line:column (exit 1).

            Examples:
              caregate convert Fixtures/provider/CarePlan-cp-1.json --to xml --pretty
              caregate convert export.ndjson -o bundle.xml
              caregate convert Fixtures/provider --to carekit

            More: Docs/converting.md (Convert).
            """
    )

    enum Target: String, ExpressibleByArgument, CaseIterable {
        case json, xml, carekit
    }

    @Argument(help: "The input file, or - for standard input.")
    var input: String

    @Option(name: .shortAndLong, help: "The output file, or - for standard output (the default).")
    var output: String?

    @Option(name: .long, help: "The output format: json, xml or carekit (default: see above).")
    var to: Target?

    @OptionGroup(title: "With --to carekit") var mappings: MappingsOption

    @OptionGroup(title: "With --to carekit") var timeZone: TimeZoneOption

    @Flag(name: .long, help: "Indent the output (JSON and XML; NDJSON stays one resource per line).")
    var pretty = false

    func validate() throws {
        try CommandInputs.requireInputs([input])
        var isDirectory: ObjCBool = false
        if input != "-", FileManager.default.fileExists(atPath: input, isDirectory: &isDirectory), isDirectory.boolValue, to != .carekit {
            throw ValidationError("input \(input) is a folder, not a file")
        }
        if let output, output != "-" {
            if FileManager.default.fileExists(atPath: output, isDirectory: &isDirectory), isDirectory.boolValue {
                throw ValidationError("--output \(output) is a folder; give the path of the file to write")
            }
            let folder = URL(fileURLWithPath: output).deletingLastPathComponent().path
            guard FileManager.default.fileExists(atPath: folder) else {
                throw ValidationError("the folder of the output file \(output) does not exist")
            }
            let written = ["json", "ndjson", "xml"]
            let fileExtension = URL(fileURLWithPath: output).pathExtension.lowercased()
            guard fileExtension.isEmpty || written.contains(fileExtension) else {
                throw ValidationError("--output \(output): convert writes JSON, NDJSON or XML, not .\(fileExtension) (name the file .json, .ndjson or .xml)")
            }
            if let to, to != .carekit, !fileExtension.isEmpty, (to == .xml) != (fileExtension == "xml") {
                throw ValidationError("--output \(output) names a .\(fileExtension) file but --to is \(to.rawValue)")
            }
        }
    }

    func run() throws {
        if to == .carekit { return try toCareKit() }
        let source: FHIRInput.Source = input == "-" ? .standardInput : .file(input)
        let data: Data
        do {
            data = try FHIRInput.data(of: source)
        } catch {
            throw CommandFailure("\(source): cannot read: \(error)")
        }

        let conversion: FHIRFormat.Conversion
        do {
            conversion = try FHIRFormat.convert(data, to: targetFormat, pretty: pretty)
        } catch let error as FHIRFormat.NarrativeNotWellFormedError {
            // FILE:line: for an NDJSON line, as syntax errors are reported.
            throw CommandFailure("\(source):\(error.line.map { "\($0):" } ?? "") \(error.location): \(error.message)")
        } catch let error as FHIRSyntaxError {
            throw CommandFailure("\(source):\(error)")
        } catch let error as FHIRFormat.UnknownFormatError {
            throw CommandFailure("\(source):\(error)")
        } catch let error as FHIRFormat.UnknownResourceTypeError {
            throw CommandFailure("\(source): \(error)")
        } catch {
            throw CommandFailure("\(source): \(error)")
        }

        guard let output, output != "-" else {
            FileHandle.standardOutput.write(conversion.data)
            return
        }
        do throws(PrivateFileError) {
            // Written beside the target (0600: patients' data) and renamed over it: a failure never leaves
            // half a file.
            try PrivateFiles.write(conversion.data, to: output)
        } catch {
            throw CommandFailure("\(output): cannot write: \(error.reason)")
        }
    }

    /// FHIR to CareKit JSON through the mappings.
    private func toCareKit() throws {
        let (json, report) = try CareKitConversion.careKitJSON(
            FHIRInput.sources(for: [input]), mappings: try mappings.load(), options: Gateway.Options(timeZone: timeZone.zone))
        if let output, output != "-" {
            do throws(PrivateFileError) {
                try PrivateFiles.write(json, to: output)
            } catch {
                throw CommandFailure("\(output): cannot write: \(error.reason)")
            }
        } else {
            FileHandle.standardOutput.write(json)
        }
        guard report.failures.isEmpty else {
            throw CommandFailure(report.failures.map { "\($0.source)\($0.entry.map { " entry[\($0)]" } ?? "") \($0.resource ?? "") \($0.path ?? ""): \($0.message)" }
                .joined(separator: "\n"))
        }
    }

    /// `--to`, else the `-o` file's extension, else nil (the other format).
    private var targetFormat: FHIRFormat? {
        if let to { return to == .json ? .json : .xml }
        guard let output, output != "-" else { return nil }
        switch URL(fileURLWithPath: output).pathExtension.lowercased() {
        case "json", "ndjson": return .json
        case "xml": return .xml
        default: return nil
        }
    }
}
