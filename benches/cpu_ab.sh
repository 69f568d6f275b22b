#!/usr/bin/env bash
# Gateway CPU per GiB of two builds, alternately on one in-memory database: each round starts a
# gateway from OLD, runs `grids3 bench --ops put,get`, stops it, then the same from NEW.
#   OLD=/path/to/old/grids3 [NEW=target/release/grids3] [CONC=16] [SIZE=16MiB] [DUR=5]
#     benches/cpu_ab.sh
# Used for BENCHMARKS.md's "CPU per GiB: MD5 sixteen uploads at a time" section.
set -uo pipefail
cd "$(dirname "$0")/.."
. benches/gateways.sh
: "${OLD:?set OLD to the grids3 binary of the other build}"
NEW=${NEW:-$BIN}
export GRIDS3_DATABASE=bench_cpu
start_db 12G
for _ in 1 2; do
  for b in "$OLD" "$NEW"; do
    BIN=$b start_gateway 9151
    echo "== $b"
    "$NEW" bench --endpoint http://127.0.0.1:9151 --ops "${OPS:-put,get}" --size "${SIZE:-16MiB}" \
      --concurrency "${CONC:-16}" --duration "${DUR:-5}" --objects 1 --gateway-pid "$GW_PID" \
      --bucket "cpu-$RANDOM" 2>/dev/null | tail -2 | grep -v '^op'
    kill "$GW_PID"
    wait "$GW_PID" 2>/dev/null
  done
done
