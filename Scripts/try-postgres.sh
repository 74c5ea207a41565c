#!/usr/bin/env bash
# The README's loop (Scripts/app-loop.sh: EHR -> store -> app -> store -> EHR) on a PostgreSQL store
# instead of the embedded SQLite file: Debian's PostgreSQL is installed when missing, a private server
# is started for the run (Scripts/postgres-helpers.sh: a mktemp folder, a free port of 127.0.0.1), the
# loop runs with CAREGATE_STORE=postgres://caregate@127.0.0.1:PORT/caregate and the password in
# PGPASSWORD (never on a command line), and the server is stopped and removed at the end.
# To point CareGate at a PostgreSQL server of your own: Docs/postgresql.md.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
    bash Scripts/install-system-packages.sh postgresql
fi
source Scripts/postgres-helpers.sh
trap stop_private_postgres EXIT
start_private_postgres caregate
echo "PostgreSQL $PG_VERSION on 127.0.0.1:$PG_PORT (stopped and removed when this script ends)"
PGPASSWORD="$PG_PASSWORD" CAREGATE_STORE="$PG_URL_WITHOUT_PASSWORD" bash Scripts/app-loop.sh
