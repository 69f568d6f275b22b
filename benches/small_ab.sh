#!/usr/bin/env bash
# The small-object rows of `grids3 bench` (PUT, GET, HEAD, LIST, DELETE, the mix; 4 KiB, with
# the raw-driver baseline) for two builds, paired and alternating: each run on a fresh
# in-memory database and a gateway of its own, the order of the two builds swapped every
# round so that a machine warming up or getting busier does not favour one of them. Prints
# each run, then the median of each row per build over the rounds (rate and ratio to the
# raw driver measured in the same run). Every run's output, stderr and gateway log stay in
# $OUT, so that an error in a row can be looked into.
#   OLD=/path/to/old/grids3 [NEW=target/release/grids3] [ROUNDS=3] [DUR=10] [OBJECTS=5000]
#   [OUT=/tmp/small_ab] [OPS=put,get,head,list,delete,mixed] benches/small_ab.sh
set -uo pipefail
cd "$(dirname "$0")/.."
. benches/gateways.sh
: "${OLD:?set OLD to the grids3 binary of the other build}"
NEW=${NEW:-$BIN}
OUT=${OUT:-$(mktemp -d /tmp/small_ab.XXXX)}
mkdir -p "$OUT"
export GRIDS3_DATABASE=bench_small
echo "runs in $OUT"
for round in $(seq 1 "${ROUNDS:-3}"); do
  order="OLD NEW"
  [ $((round % 2)) -eq 0 ] && order="NEW OLD"
  for side in $order; do
    b=${!side}
    (
      WORK=$(mktemp -d)
      PIDS=()
      start_db 10G
      BIN=$b start_gateway 9161
      "$b" bench --endpoint http://127.0.0.1:9161 --ops "${OPS:-put,get,head,list,delete,mixed}" \
        --duration "${DUR:-10}" --objects "${OBJECTS:-5000}" --baseline --gateway-pid "$GW_PID" \
        >"$OUT/$round-$side.txt" 2>"$OUT/$round-$side.err"
      cp "$WORK/gw9161.log" "$OUT/$round-$side.gw.log"
      cleanup
    )
    tr '\r' '\n' <"$OUT/$round-$side.txt" | grep -E '^(put|get|head|list|delete|mixed) ' |
      awk -v s="$side" -v r="$round" '{printf "round %s %s %-7s %10s/s  %5s errors  ratio %s\n", r, s, $1, ($1 == "list" ? $8 : $2), $7, $10}'
  done
done
echo
echo "medians over ${ROUNDS:-3} rounds (LIST in keys/s):"
for side in OLD NEW; do
  cat "$OUT"/*-"$side".txt | tr '\r' '\n' | grep -E '^(put|get|head|list|delete|mixed) ' |
    awk -v s="$side" '{print s, $1, ($1 == "list" ? $8 : $2), $10, $7}'
done | sort -k2,2 -k1,1 | awk '
  function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  { k = $2 " " $1; rate[k] = rate[k] " " $3; ratio[k] = ratio[k] " " $4; err[k] += $5 }
  END { for (k in rate) printf "%-12s %10.1f/s  ratio %.2f  errors %d\n", k, median(rate[k]), median(ratio[k]), err[k] }' | sort
