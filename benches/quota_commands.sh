#!/usr/bin/env bash
# Issue 62: one 10 s run of `grids3 bench` small PUT with the driver's command metrics on, into
# a bucket with a 100 GiB limit (`metered`) or none (`plain`); prints the bench row and the
# command counts and seconds from /_grids3/metrics.   benches/quota_commands.sh plain|metered
set -uo pipefail
cd "$(dirname "$0")/.."
. benches/gateways.sh
export GRIDS3_DATABASE=bench_quota GRIDS3_MONGODB_COMMAND_METRICS=true
side=$1
WORK=$(mktemp -d)
PIDS=()
start_db 8G
start_gateway 9171
if [ "$side" = metered ]; then
$PY - <<'PY'
import os, boto3
from botocore.config import Config
from minio import MinioAdmin
from minio.credentials import StaticProvider
ak, sk = os.environ["GRIDS3_ROOT_ACCESS_KEY"], os.environ["GRIDS3_ROOT_SECRET_KEY"]
s3 = boto3.client("s3", endpoint_url="http://127.0.0.1:9171", aws_access_key_id=ak, aws_secret_access_key=sk, region_name="us-east-1", config=Config(s3={"addressing_style": "path"}))
s3.create_bucket(Bucket="grids3-bench")
MinioAdmin(endpoint="127.0.0.1:9171", credentials=StaticProvider(ak, sk), secure=False).bucket_quota_set("grids3-bench", 100 << 30)
PY
fi
"$BIN" bench --endpoint http://127.0.0.1:9171 --ops put --duration 10 --gateway-pid "$GW_PID" 2>/dev/null | tr '\r' '\n' | grep "^put"
curl -s http://127.0.0.1:9171/_grids3/metrics | grep -E "grids3_mongodb_command_duration_seconds_(count|sum)" | sort
cleanup
