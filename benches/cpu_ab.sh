#!/usr/bin/env bash
# Gateway CPU per GiB of two builds (or one build under two settings), each run on a fresh
# in-memory database: the database slows as it fills, and CPU per GiB rises as the rate falls
# (more wake-ups per byte), so runs on one shared database compare conditions, not builds.
# Per round: OLD, then NEW, each `grids3 bench --ops put,get` against its own gateway.
#   OLD=/path/to/old/grids3 [NEW=target/release/grids3] [OLD_ENV=VAR=value] [NEW_ENV=VAR=value]
#   [ROUNDS=3] [CONC=16] [SIZE=16MiB] [DUR=8] [OPS=put,get] benches/cpu_ab.sh
# Used for BENCHMARKS.md's "CPU per GiB" sections of issue 36.
set -uo pipefail
cd "$(dirname "$0")/.."
. benches/gateways.sh
: "${OLD:?set OLD to the grids3 binary of the other build}"
NEW=${NEW:-$BIN}
export GRIDS3_DATABASE=bench_cpu
for _ in $(seq 1 "${ROUNDS:-3}"); do
  for side in OLD NEW; do
    b=${!side}
    e_var=${side}_ENV
    (
      # A database and a gateway of their own, stopped before the next run starts.
      WORK=$(mktemp -d)
      PIDS=()
      start_db 8G
      [ -n "${!e_var:-}" ] && export "${!e_var}"
      BIN=$b start_gateway 9151
      "$b" bench --endpoint http://127.0.0.1:9151 --ops "${OPS:-put,get}" --size "${SIZE:-16MiB}" \
        --concurrency "${CONC:-16}" --duration "${DUR:-8}" --objects 1 --gateway-pid "$GW_PID" \
        --bucket "cpu-$RANDOM" 2>/dev/null | grep -v '^op' | tr '\r' '\n' | grep -v ': ' |
        awk -v s="$side" -v e="${!e_var:-}" 'NF > 5 {printf "%s %s %-4s %8s MB/s  CPU %s s/GiB\n", s, e, $1, $3, $NF}'
      cleanup
    )
  done
done
