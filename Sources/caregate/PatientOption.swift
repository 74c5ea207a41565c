import ArgumentParser

/// `--patient ID`, shared by every command about one patient of the store.
struct PatientOption: ParsableArguments {
    @Option(name: .customLong("patient"), help: ArgumentHelp("The patient's id in the store (such as Patient/pat-1).", valueName: "id"))
    var id: String
}
