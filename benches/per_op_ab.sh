#!/usr/bin/env bash
# Per-operation cost of two builds, paired and alternating (see benches/per_op.py): each run
# on a fresh in-memory database and a gateway of its own with driver command metrics, the
# order swapped every round. Prints, per phase, wall time, database CPU and gateway CPU per
# operation, and the driver's commands per operation.
#   OLD=/path/to/old/grids3 [NEW=target/release/grids3] [ROUNDS=2] benches/per_op_ab.sh
set -uo pipefail
cd "$(dirname "$0")/.."
. benches/gateways.sh
: "${OLD:?set OLD to the grids3 binary of the other build}"
NEW=${NEW:-$BIN}
export GRIDS3_DATABASE=bench_per_op GRIDS3_MONGODB_COMMAND_METRICS=true
for round in $(seq 1 "${ROUNDS:-2}"); do
  order="OLD NEW"
  [ $((round % 2)) -eq 0 ] && order="NEW OLD"
  for side in $order; do
    (
      WORK=$(mktemp -d)
      PIDS=()
      start_db 10G
      DBPID=${PIDS[0]}
      BIN=${!side} start_gateway 9171
      echo "== round $round $side (${!side})"
      $PY benches/per_op.py "$DBPID" "$GW_PID"
      cleanup
    )
  done
done
