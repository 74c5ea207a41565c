import Foundation
import TestSupport
import XCTest

/// The documentation stays a door a reader can walk through: every relative link of the README, Docs/
/// and Mappings/README.md resolves (file and heading), the README stays short, and each command's
/// `--help` is a short description with examples, sending the reader to the page with the rest.
final class DocsTests: XCTestCase {
    /// The Markdown files a reader follows: the README, every page of Docs/, the mapping authors' guide.
    private func documentationFiles() throws -> [URL] {
        let root = Corpus.projectRoot
        let docs = root.appendingPathComponent("Docs")
        let pages = try FileManager.default.contentsOfDirectory(at: docs, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "md" }
        XCTAssertFalse(pages.isEmpty, "Docs/ has no Markdown page")
        return [root.appendingPathComponent("README.md"), root.appendingPathComponent("Mappings/README.md")] + pages.sorted { $0.path < $1.path }
    }

    func testEveryRelativeLinkResolvesToAFileAndHeading() throws {
        var checked = 0
        for file in try documentationFiles() {
            let links = try MarkdownLinks(text: String(contentsOf: file, encoding: .utf8)).relativeLinks()
            for link in links {
                checked += 1
                let place = "\(file.lastPathComponent):\(link.line): \(link.target)"
                let parts = link.target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
                let path = parts[0].removingPercentEncoding ?? parts[0]
                let target = path.isEmpty ? file : file.deletingLastPathComponent().appendingPathComponent(path).standardizedFileURL
                guard FileManager.default.fileExists(atPath: target.path) else {
                    XCTFail("\(place): no such file \(target.path)")
                    continue
                }
                guard parts.count == 2 else { continue }
                XCTAssertEqual(target.pathExtension, "md", "\(place): a heading anchor into a file that is not Markdown")
                let anchors = MarkdownLinks(text: try String(contentsOf: target, encoding: .utf8)).anchors
                XCTAssertTrue(anchors.contains(parts[1]), "\(place): \(target.lastPathComponent) has no heading #\(parts[1]) (it has: \(anchors.sorted().joined(separator: ", ")))")
            }
        }
        XCTAssertGreaterThan(checked, 20, "the link check found almost no links: is the parser broken?")
    }

    func testHeadingAnchorsFollowGitHub() {
        XCTAssertEqual(MarkdownLinks.slug("sync.yaml reference"), "syncyaml-reference")
        XCTAssertEqual(MarkdownLinks.slug("Outcome versions: CareKit's version graph"), "outcome-versions-carekits-version-graph")
        XCTAssertEqual(MarkdownLinks.slug("A SMART / OpenID issuer's (`serve --issuer URL`)"), "a-smart--openid-issuers-serve---issuer-url")
        let links = MarkdownLinks(text: "# Title\n## Title\n```\n# not a heading [x](nowhere.md)\n```\nSee [a](b.md#c) and `[d](e.md)`.")
        XCTAssertEqual(links.anchors, ["title", "title-1"])
        XCTAssertEqual(try links.relativeLinks(), [MarkdownLinks.Link(target: "b.md#c", line: 6)])
    }

    func testTheReadmeIsADoorNotAManual() throws {
        let readme = try String(contentsOf: Corpus.projectRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let lines = readme.split(separator: "\n", omittingEmptySubsequences: false)
        XCTAssertLessThanOrEqual(lines.count, 130, "the README is \(lines.count) lines: move the detail to a page of Docs/")
        // The two commands come first, as they are.
        let opening = lines.prefix(6).joined(separator: "\n")
        XCTAssertTrue(opening.contains("bash Scripts/app-loop.sh\nbash Scripts/setup-test-tools.sh && swift test"), opening)
    }

    /// Every command of `caregate` (found from the help's own SUBCOMMANDS lists) and the example app: at
    /// most 20 lines before its arguments and options, and a page of Docs/ (or the mapping guide) named.
    func testEachCommandsHelpIsShortAndNamesItsPage() throws {
        var paths: [[String]] = [[]]
        var checked = 0
        while let path = paths.popLast() {
            let result = try CLIRunner.run(path + ["--help"])
            XCTAssertEqual(result.status, 0, "caregate \(path.joined(separator: " ")) --help: \(result.stderr)")
            try checkHelp(result.stdout, of: "caregate " + path.joined(separator: " "))
            paths += Self.subcommands(in: result.stdout).map { path + [$0] }
            checked += 1
        }
        XCTAssertGreaterThan(checked, 20, "the SUBCOMMANDS lists gave almost no command")

        let exampleApp = CLIRunner.executable.deletingLastPathComponent().appendingPathComponent("caregate-example-app")
        let process = Process()
        process.executableURL = exampleApp
        process.arguments = ["--help"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let help = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        try checkHelp(help, of: "caregate-example-app")
    }

    private func checkHelp(_ help: String, of command: String) throws {
        let lines = help.components(separatedBy: "\n")
        let before = lines.firstIndex { ["ARGUMENTS:", "OPTIONS:"].contains($0) || $0.hasSuffix("SUBCOMMANDS:") } ?? lines.count
        XCTAssertLessThanOrEqual(before, 20, "\(command) --help prints \(before) lines before its options:\n\(lines.prefix(before).joined(separator: "\n"))")
        XCTAssertNotNil(help.range(of: #"(Docs/[a-z-]+\.md|Mappings/README\.md)"#, options: .regularExpression), "\(command) --help names no page with the rest")
        // The page it names exists.
        for match in help.matches(of: /(Docs\/[a-z-]+\.md|Mappings\/README\.md)/) {
            let page = Corpus.projectRoot.appendingPathComponent(String(match.output.1))
            XCTAssertTrue(FileManager.default.fileExists(atPath: page.path), "\(command) --help names \(match.output.1), which does not exist")
        }
    }

    /// The names under each `... SUBCOMMANDS:` heading of a help text (`list (default)` gives `list`).
    static func subcommands(in help: String) -> [String] {
        var names: [String] = []
        var inList = false
        for line in help.components(separatedBy: "\n") {
            if line.hasSuffix("SUBCOMMANDS:") { inList = true; continue }
            if line.isEmpty || !line.hasPrefix(" ") { inList = false; continue }
            guard inList, line.hasPrefix("  "), !line.hasPrefix("   ") else { continue }
            if let name = line.split(separator: " ").first, name != "help" { names.append(String(name)) }
        }
        return names
    }
}
