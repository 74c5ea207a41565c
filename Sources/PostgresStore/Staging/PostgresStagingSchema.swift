// OWNER: helper h-pgstaging.
/// Export progress, report starts, dead letters, consent decisions and questionnaires.
public enum PostgresStagingSchema {
    public static let migrations: [PostgresMigrations.Migration] = []
}
