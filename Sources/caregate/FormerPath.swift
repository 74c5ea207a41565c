import ArgumentParser

/// A command that moved to another parent (`caregate report` is now `caregate patients report`).
protocol MovedCommand: ParsableCommand {
    /// Where it is now, after `caregate ` (`patients report`).
    static var path: String { get }
}

/// A moved command kept at its former path: the same options, the same run, left out of the help, so
/// that the scripts and habits written for the old path go on working.
///
/// ArgumentParser's `aliases:` only rename a command among its siblings (and list the alias in the
/// help); a command that moved to another parent needs a command of its own at the old place.
struct FormerPath<Command: MovedCommand>: ParsableCommand {
    static var configuration: CommandConfiguration {
        let moved = Command.configuration
        return CommandConfiguration(
            commandName: moved.commandName,
            abstract: moved.abstract,
            discussion: "The former path of `caregate \(Command.path)`, which it runs.\n\n" + moved.discussion,
            shouldDisplay: false)
    }

    /// The moved command's options (the option group validates them, as the command would).
    @OptionGroup var command: Command

    mutating func run() throws {
        try command.run()
    }
}
