import AppServer
import ArgumentParser
import CommandSupport
import Foundation
import Store

/// `caregate patients`: what the command line does for one patient of the store: their day-by-day
/// events, their care team's report, a token for their app.
struct PatientsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "patients",
        abstract: "One patient's care team, events and care-team report, and access tokens for their app.",
        discussion: """
            Every subcommand takes --patient ID (the patient's id in the store, such as Patient/pat-1) and \
            --store PATH.

            Examples:
              caregate patients contacts --patient Patient/pat-1
              caregate patients events --patient Patient/pat-1 --from 2026-11-02
              caregate patients token --key server.key --patient Patient/pat-1

            More: Docs/store.md, Docs/app-api.md.
            """,
        subcommands: [PatientsConsent.self, PatientsContacts.self, PatientsEvents.self, PatientsReport.self, PatientsToken.self]
    )
}

/// `caregate patients token --patient ID --key FILE [--expires-in 1h]`
struct PatientsToken: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Issue an access token of the app API for one patient of the store.",
        discussion: """
            Prints a JWT signed (ES256) by --key, the file `caregate serve` is given (made, mode 0600, when \
            missing), bound to the patient and to the API's audience. Anyone holding it reads and writes that \
            patient's data until it expires: hand it to the patient's app only.

            Example:
              caregate patients token --store caregate.sqlite --key server.key \\
                --patient Patient/pat-1 --expires-in 1h

            More: Docs/app-auth.md.
            """
    )

    @OptionGroup var storeOptions: StoreOptions

    @Option(name: .long, help: ArgumentHelp("The server's ES256 key (PEM); made when missing.", valueName: "file"))
    var key: String

    @OptionGroup var patient: PatientOption

    @Option(name: .long, help: ArgumentHelp("Lifetime: seconds, or a number with s, m, h or d (at most 366d).", valueName: "duration"))
    var expiresIn: String = "1h"

    @Option(name: .long, help: ArgumentHelp("The audience (the server's --audience).", valueName: "aud"))
    var audience: String = PatientToken.defaultAudience

    func validate() throws {
        guard let seconds = Self.seconds(expiresIn), seconds > 0 else {
            throw ValidationError("--expires-in must be a positive duration such as 3600, 90m, 1h or 7d")
        }
        guard seconds <= PatientToken.maximumLifetime else { throw ValidationError("--expires-in can be at most 366d") }
        guard !patient.id.isEmpty, patient.id.utf8.count <= 256 else { throw ValidationError("--patient must be 1 to 256 bytes") }
    }

    func run() async throws {
        let store = try storeOptions.openForReading()
        guard try !store.patients(EntityQuery(ids: [patient.id])).isEmpty else {
            throw CommandFailure("no patient '\(patient.id)' in \(storeOptions.store)")
        }
        let key = try ServerKey.loadOrCreate(path: self.key)
        let token = try await PatientToken.issueAsync(patientID: patient.id, key: key, audience: audience, lifetime: Self.seconds(expiresIn) ?? 3600)
        print(token)
    }

    /// `3600`, `90s`, `30m`, `1h`, `7d` in seconds; nil when it is none of these.
    static func seconds(_ text: String) -> TimeInterval? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        var number = Substring(text)
        var unit = 1.0
        if let last = text.last, let scale = units[last] {
            number = number.dropLast()
            unit = scale
        }
        guard !number.isEmpty, number.allSatisfy(\.isASCII), let value = Int(number), value <= 1_000_000_000 else { return nil }
        return Double(value) * unit
    }
}
