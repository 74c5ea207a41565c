// OWNER: helper h-pgwrites.
/// The care entities' tables (every version of each), source resources, links and the revision log.
public enum PostgresEntitySchema {
    public static let migrations: [PostgresMigrations.Migration] = []
}
