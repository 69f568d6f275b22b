#!/usr/bin/env bash
# Aggregate throughput of one and of two grids3 instances on one database (issue 36).
#
# Starts an in-memory SecantusDB and two gateways on it (ports 9101 and 9102), then runs
# `grids3 bench` three ways, each on a fresh bucket: one instance with 32 workers; the same
# instance with 16 workers (the per-instance share); both instances at once with 16 workers
# each, the two generators started together. Prints each generator's figures and the sums.
#
#   cargo build --release --locked && benches/two_instances.sh [ops] [size] [seconds]
#
# Defaults: ops put,get; 4KiB; 10 s. Everything it starts is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
OPS=${1:-put,get}
SIZE=${2:-4KiB}
SECS=${3:-10}
. benches/gateways.sh
export GRIDS3_DATABASE=bench_two
start_db 8G
start_gateway 9101
start_gateway 9102
bench() { # endpoint workers bucket
  "$BIN" bench --endpoint "$1" --ops "$OPS" --size "$SIZE" --concurrency "$2" \
    --duration "$SECS" --objects 2000 --bucket "$3" 2>/dev/null
}
rates() { awk '$1 ~ /^(put|get|head|list|delete|mixed)$/ {print $1, $2}' "$1"; }
echo "== one instance, 32 workers"
bench http://127.0.0.1:9101 32 one32 | tee "$WORK/one32"
echo "== one instance, 16 workers"
bench http://127.0.0.1:9101 16 one16 | tee "$WORK/one16"
echo "== two instances, 16 workers each, at once"
bench http://127.0.0.1:9101 16 twoa >"$WORK/twoa" &
A=$!
bench http://127.0.0.1:9102 16 twob >"$WORK/twob" &
B=$!
wait $A $B
cat "$WORK/twoa" "$WORK/twob"
echo "== aggregate ops/s"
join <(rates "$WORK/twoa" | sort) <(rates "$WORK/twob" | sort) | sort >"$WORK/two"
join "$WORK/two" <(rates "$WORK/one32" | sort) | while read -r op a b one; do
  awk -v op="$op" -v a="$a" -v b="$b" -v one="$one" \
    'BEGIN { printf "%-8s two instances %8.1f (%.1f + %.1f); one instance, 32 workers %8.1f; ratio %.2f\n", op, a + b, a, b, one, (a + b) / one }'
done
