# Sourced by the scripts that run the loop through `caregate serve` (app-loop.sh, try-readings.sh,
# try-survey.sh): start it on a free port of 127.0.0.1 and wait for /health; stop it.
# start_serve BIN STORE KEY sets `port` and `server` (its pid), and stops it on exit until stop_serve.
start_serve() {
    local bin=$1 store=$2 key=$3
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "$bin/caregate" serve --store "$store" --key "$key" --host 127.0.0.1 --port "$port" &
    server=$!
    trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT
    for _ in $(seq 1 100); do
        python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/health', timeout=1)" 2>/dev/null && return 0
        kill -0 "$server" 2>/dev/null || { echo "caregate serve did not start" >&2; exit 1; }
        sleep 0.1
    done
    echo "caregate serve did not answer on 127.0.0.1:$port" >&2
    exit 1
}

stop_serve() {
    kill "$server"
    wait "$server" 2>/dev/null || true
    trap - EXIT
}
