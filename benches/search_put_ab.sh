#!/usr/bin/env bash
# Issue 63's cost of declared search indexes on writes: `grids3 bench` small PUT (4 KiB) into
# a bucket without search indexes and into one with three declared fields (size,
# last-modified, content-type: four indexes, all with a value on every PUT), paired and
# alternating. Each run on a
# fresh in-memory database and a gateway of its own, the order swapped every round, so a
# machine warming up or getting busier favours neither. Prints each run and the medians.
#   [ROUNDS=4] [DUR=10] [OPS=put] [OUT=/tmp/search_put_ab] benches/search_put_ab.sh
set -uo pipefail
cd "$(dirname "$0")/.."
. benches/gateways.sh
OUT=${OUT:-$(mktemp -d /tmp/search_put_ab.XXXX)}
mkdir -p "$OUT"
export GRIDS3_DATABASE=bench_search
echo "runs in $OUT"
for round in $(seq 1 "${ROUNDS:-4}"); do
  order="plain indexed"
  [ $((round % 2)) -eq 0 ] && order="indexed plain"
  for side in $order; do
    (
      WORK=$(mktemp -d)
      PIDS=()
      start_db 8G
      start_gateway 9171
      if [ "$side" = indexed ]; then
        $PY -c "
import os, boto3
from botocore.config import Config
s3 = boto3.client('s3', endpoint_url='http://127.0.0.1:9171', region_name='us-east-1',
                  aws_access_key_id=os.environ['GRIDS3_ROOT_ACCESS_KEY'],
                  aws_secret_access_key=os.environ['GRIDS3_ROOT_SECRET_KEY'],
                  config=Config(s3={'addressing_style': 'path'}))
s3.create_bucket(Bucket='grids3-bench')" || exit 1
        GRIDS3_ENDPOINT=http://127.0.0.1:9171 "$BIN" admin search-indexes grids3-bench \
          size last-modified content-type >"$OUT/$round-declared.json" || exit 1
      fi
      "$BIN" bench --endpoint http://127.0.0.1:9171 --ops "${OPS:-put}" \
        --duration "${DUR:-10}" --gateway-pid "$GW_PID" \
        >"$OUT/$round-$side.txt" 2>"$OUT/$round-$side.err"
      cp "$WORK/gw9171.log" "$OUT/$round-$side.gw.log"
      cleanup
    )
    tr '\r' '\n' <"$OUT/$round-$side.txt" | grep -E '^(put|get|delete|mixed) ' |
      awk -v s="$side" -v r="$round" '{printf "round %s %-7s %-6s %10s/s  %5s errors\n", r, s, $1, $2, $7}'
  done
done | tee "$OUT/rounds.txt"
echo
for side in plain indexed; do
  for op in $(echo "${OPS:-put}" | tr ',' ' '); do
    awk -v s="$side" -v o="$op" '$3 == s && $4 == o {print $5}' "$OUT/rounds.txt" | tr -d '/s' |
      sort -n | awk -v s="$side" -v o="$op" '{a[NR]=$1} END {m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; printf "median %-7s %-6s %10.1f/s over %d rounds\n", s, o, m, NR}'
  done
done
