# Sourced by the shell benchmarks (benches/generator.sh, benches/two_instances.sh): an
# in-memory SecantusDB and gateways on it, all stopped when the sourcing script exits.
# Sets BIN, PY, MONGODB_URI and the root keys; `start_gateway PORT` sets GW_PID.
BIN=target/release/grids3
PY=.venv/bin/python
[ -x "$BIN" ] || { echo "build first: cargo build --release --locked" >&2; exit 2; }
[ -x "$PY" ] || { echo "no .venv: run ./scripts/test once (it installs the local database)" >&2; exit 2; }
PIDS=()
WORK=$(mktemp -d)
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# Starts the database (cache $1, default 8G) and exports what gateways and `grids3 bench` need.
start_db() {
  local port
  port=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  $PY -m secantus --host 127.0.0.1 --port "$port" --storage-path :memory: --log-level WARNING \
    --cache-size "${1:-8G}" >"$WORK/db.log" 2>&1 &
  PIDS+=($!)
  export MONGODB_URI="mongodb://127.0.0.1:$port/?directConnection=true"
  export GRIDS3_ROOT_ACCESS_KEY=benchroot GRIDS3_ROOT_SECRET_KEY=benchroot-secret-key
  GRIDS3_MASTER_KEY=$($PY -c 'import os; print(os.urandom(32).hex())')
  export GRIDS3_MASTER_KEY
  for _ in $(seq 1 100); do
    $PY -c "import pymongo; pymongo.MongoClient('$MONGODB_URI', serverSelectionTimeoutMS=300).admin.command('ping')" \
      2>/dev/null && return 0
    sleep 0.2
  done
  echo "the database did not start" >&2
  exit 1
}

# Starts a gateway on 127.0.0.1:$1 (database $GRIDS3_DATABASE) and waits until it answers.
start_gateway() {
  GRIDS3_LISTEN=127.0.0.1:$1 RUST_LOG=warn "$BIN" >"$WORK/gw$1.log" 2>&1 &
  GW_PID=$!
  PIDS+=($GW_PID)
  for _ in $(seq 1 150); do
    curl -s -o /dev/null "http://127.0.0.1:$1/" && return 0
    sleep 0.2
  done
  echo "the gateway on port $1 did not start" >&2
  exit 1
}
