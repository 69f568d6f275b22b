#!/usr/bin/env bash
# The issue-36 table in one run: an in-memory SecantusDB, one gateway, and `grids3 bench`
# with the raw-driver baseline for the small-object operations, DeleteObjects, and 256 MiB
# objects (with the gateway's CPU per GiB).
#
#   cargo build --release --locked && benches/generator.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/gateways.sh
export GRIDS3_DATABASE=bench_gen
start_db 10G
start_gateway 9121
GW=$GW_PID
E=http://127.0.0.1:9121
set -x
"$BIN" bench --endpoint $E --ops put,get,head,list,delete,mixed --duration 10 --objects 5000 \
  --baseline --gateway-pid "$GW" 2>/dev/null
"$BIN" bench --endpoint $E --ops multidelete --concurrency 4 --duration 30 --objects 4000 \
  --baseline --bucket bench-multi 2>/dev/null
"$BIN" bench --endpoint $E --ops multidelete --concurrency 1 --duration 20 --objects 3000 \
  --baseline --bucket bench-multi1 2>/dev/null
"$BIN" bench --endpoint $E --ops put,get --size 256MiB --concurrency 1 --duration 20 --objects 2 \
  --gateway-pid "$GW" --bucket bench-big 2>/dev/null
# GET without the small-object cache (a gateway of its own, started with it off): what a GET
# of an object this instance has not seen costs (the one-query join).
set +x
GRIDS3_SMALL_OBJECT_CACHE_MIB=0
export GRIDS3_SMALL_OBJECT_CACHE_MIB
start_gateway 9122
set -x
"$BIN" bench --endpoint http://127.0.0.1:9122 --ops get --duration 10 --objects 5000 \
  --baseline --gateway-pid "$GW_PID" --bucket bench-cold 2>/dev/null
