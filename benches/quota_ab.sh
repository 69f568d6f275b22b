#!/usr/bin/env bash
# Issue 62's cost of a limit: `grids3 bench` small PUT (4 KiB) into a bucket without a limit
# and into one with a limit (100 GiB: never reached), paired and alternating. Each run on a
# fresh in-memory database and a gateway of its own, the order swapped every round, so a
# machine warming up or getting busier favours neither. Prints each run and the medians.
#   [ROUNDS=4] [DUR=10] [OPS=put] [OUT=/tmp/quota_ab] benches/quota_ab.sh
set -uo pipefail
cd "$(dirname "$0")/.."
. benches/gateways.sh
OUT=${OUT:-$(mktemp -d /tmp/quota_ab.XXXX)}
mkdir -p "$OUT"
export GRIDS3_DATABASE=bench_quota
echo "runs in $OUT"
for round in $(seq 1 "${ROUNDS:-4}"); do
  order="plain metered"
  [ $((round % 2)) -eq 0 ] && order="metered plain"
  for side in $order; do
    (
      WORK=$(mktemp -d)
      PIDS=()
      start_db 8G
      start_gateway 9171
      if [ "$side" = metered ]; then
        $PY - <<'PY' || exit 1
import os
import boto3
from botocore.config import Config
from minio import MinioAdmin
from minio.credentials import StaticProvider
ak, sk = os.environ["GRIDS3_ROOT_ACCESS_KEY"], os.environ["GRIDS3_ROOT_SECRET_KEY"]
s3 = boto3.client("s3", endpoint_url="http://127.0.0.1:9171", aws_access_key_id=ak,
                  aws_secret_access_key=sk, region_name="us-east-1",
                  config=Config(s3={"addressing_style": "path"}))
s3.create_bucket(Bucket="grids3-bench")
MinioAdmin(endpoint="127.0.0.1:9171", credentials=StaticProvider(ak, sk),
           secure=False).bucket_quota_set("grids3-bench", 100 << 30)
PY
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
for side in plain metered; do
  for op in $(echo "${OPS:-put}" | tr ',' ' '); do
    awk -v s="$side" -v o="$op" '$3 == s && $4 == o {print $5}' "$OUT/rounds.txt" | tr -d '/s' |
      sort -n | awk -v s="$side" -v o="$op" '{a[NR]=$1} END {m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; printf "median %-7s %-6s %10.1f/s over %d rounds\n", s, o, m, NR}'
  done
done
