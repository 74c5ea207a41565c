import ArgumentParser
import Foundation

/// `--time-zone ZONE`, shared by every command that reads local times or plain dates: an IANA zone,
/// this machine's by default.
struct TimeZoneOption: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(
        "The zone of local times and plain dates (an IANA name such as Europe/Paris); default: this machine's.", valueName: "zone"))
    var timeZone: String?

    func validate() throws {
        if let timeZone, TimeZone(identifier: timeZone) == nil {
            throw ValidationError("unknown time zone '\(timeZone)' (use an IANA name such as Europe/Paris or UTC)")
        }
    }

    /// The zone named, or this machine's.
    var zone: TimeZone {
        timeZone.flatMap(TimeZone.init(identifier:)) ?? .current
    }
}
