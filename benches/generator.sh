#!/usr/bin/env bash
# The issue-36 table in one run: an in-memory SecantusDB, one gateway, and `grids3 bench`
# with the raw-driver baseline for the small-object operations, DeleteObjects, and 256 MiB
# objects (with the gateway's CPU per GiB).
#
#   cargo build --release --locked && benches/generator.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=target/release/grids3
PY=.venv/bin/python
[ -x "$BIN" ] || { echo "build first: cargo build --release --locked" >&2; exit 2; }
[ -x "$PY" ] || { echo "no .venv: run ./scripts/test once (it installs the local database)" >&2; exit 2; }
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
DBPORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
$PY -m secantus --host 127.0.0.1 --port "$DBPORT" --storage-path :memory: --log-level WARNING \
  --cache-size 10G >/dev/null 2>&1 &
PIDS+=($!)
export MONGODB_URI="mongodb://127.0.0.1:$DBPORT/?directConnection=true" GRIDS3_DATABASE=bench_gen
export GRIDS3_ROOT_ACCESS_KEY=benchroot GRIDS3_ROOT_SECRET_KEY=benchroot-secret-key
export GRIDS3_MASTER_KEY=$($PY -c 'import os; print(os.urandom(32).hex())')
for i in $(seq 1 100); do
  $PY -c "import pymongo; pymongo.MongoClient('$MONGODB_URI', serverSelectionTimeoutMS=300).admin.command('ping')" \
    2>/dev/null && break
  sleep 0.2
done
GRIDS3_LISTEN=127.0.0.1:9121 RUST_LOG=warn "$BIN" >/dev/null 2>&1 &
GW=$!
PIDS+=($GW)
for i in $(seq 1 150); do curl -s -o /dev/null http://127.0.0.1:9121/ && break; sleep 0.2; done
E=http://127.0.0.1:9121
set -x
"$BIN" bench --endpoint $E --ops put,get,head,list,delete,mixed --duration 10 --objects 5000 \
  --baseline --gateway-pid $GW 2>/dev/null
"$BIN" bench --endpoint $E --ops multidelete --concurrency 4 --duration 30 --objects 4000 \
  --baseline --bucket bench-multi 2>/dev/null
"$BIN" bench --endpoint $E --ops multidelete --concurrency 1 --duration 20 --objects 3000 \
  --baseline --bucket bench-multi1 2>/dev/null
"$BIN" bench --endpoint $E --ops put,get --size 256MiB --concurrency 1 --duration 20 --objects 2 \
  --gateway-pid $GW --bucket bench-big 2>/dev/null
