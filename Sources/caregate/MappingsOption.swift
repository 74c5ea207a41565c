import ArgumentParser
import CommandSupport
import Mapping

/// `--mappings DIR`, shared by every command that maps: a folder of mapping files layered over the
/// default mappings.
struct MappingsOption: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("A folder of mapping files layered over the defaults.", valueName: "dir"))
    var mappings: String?

    func validate() throws {
        if let mappings { try CommandInputs.requireFolder(mappings, "--mappings") }
    }

    /// The default mappings with the folder's layered over them; mappings with errors are a failure
    /// listing each at file:line:column.
    func load() throws -> MappingSet {
        try CommandInputs.mappings(overriddenBy: mappings)
    }
}
