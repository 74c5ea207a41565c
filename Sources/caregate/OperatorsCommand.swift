import AppServer
import ArgumentParser
import CommandSupport
import Foundation

/// `caregate operators`: tokens for the people who run the gateway (the operator page).
struct OperatorsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "operators",
        abstract: "Tokens for the operator page of caregate serve (/operator).",
        discussion: """
            Example:
              caregate operators token --key server.key --name night-shift --expires-in 8h

            More: Docs/operator-page.md.
            """,
        subcommands: [OperatorsToken.self])
}

/// `caregate operators token --key FILE [--expires-in 8h] [--name NAME]`
struct OperatorsToken: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Issue a token for the operator page (/operator); it opens no patient's data.",
        discussion: """
            Prints a JWT signed (ES256) by --key, the file `caregate serve` is given (made, mode 0600, when \
            missing), for the operator audience with role operator: /operator accepts it and every /carekit/v1 \
            route refuses it, as /operator refuses a patient's token. Open the page in a browser with \
            http://HOST:PORT/operator/login?token=TOKEN (it becomes an HttpOnly cookie), or send it as \
            Authorization: Bearer. Anyone holding it can replay dead letters and requeue outbox entries until \
            it expires.

            Example:
              caregate operators token --key server.key --name night-shift --expires-in 8h

            More: Docs/operator-page.md.
            """
    )

    @Option(name: .long, help: ArgumentHelp("The server's ES256 key (PEM); made when missing.", valueName: "file"))
    var key: String

    @Option(name: .long, help: ArgumentHelp("Lifetime: seconds, or a number with s, m, h or d (at most 31d).", valueName: "duration"))
    var expiresIn: String = "8h"

    @Option(name: .long, help: ArgumentHelp("Who the token is for (the audit and the page show it): letters, digits, . _ - @, 1 to 64.", valueName: "name"))
    var name: String = "operator"

    func validate() throws {
        guard let seconds = PatientsToken.seconds(expiresIn), seconds > 0 else {
            throw ValidationError("--expires-in must be a positive duration such as 3600, 90m, 8h or 7d")
        }
        guard seconds <= OperatorToken.maximumLifetime else { throw ValidationError("--expires-in can be at most 31d") }
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "._-@"))
        guard (1...64).contains(name.utf8.count), name.unicodeScalars.allSatisfy({ $0.isASCII && allowed.contains($0) }) else {
            throw ValidationError("--name must be 1 to 64 ASCII letters, digits, '.', '_', '-' or '@'")
        }
    }

    func run() async throws {
        let key = try ServerKey.loadOrCreate(path: self.key)
        print(try await OperatorToken.issueAsync(name: name, key: key, lifetime: PatientsToken.seconds(expiresIn) ?? 8 * 3600))
    }
}
