#!/usr/bin/env bash
# The web console's figures (issue 39): the time to open a folder of 100,000 keys (its first
# page, cold and warm) and the upload throughput of the console's browser multipart path
# against the AWS CLI on the same file, in headless Chromium (Debian's chromium).
#
#   cargo build --release --locked && benches/console.sh [keys] [MiB]
#
# Defaults: 100000 keys; a 128 MiB file. Starts an in-memory SecantusDB and one gateway (S3 on
# 9111, console on 9112); everything it starts is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
KEYS=${1:-100000}
MIB=${2:-128}
. benches/gateways.sh
export GRIDS3_DATABASE=bench_console
export GRIDS3_CONSOLE_LISTEN=127.0.0.1:9112
start_db 8G
start_gateway 9111
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] || { echo "needs Debian's chromium at $CHROMIUM" >&2; exit 2; }
echo "== grids3 $(git rev-parse --short HEAD), $(nproc) cores"
"$PY" benches/console_bench.py http://127.0.0.1:9111 http://127.0.0.1:9112 "$MONGODB_URI" \
  "$GRIDS3_DATABASE" "$CHROMIUM" "$KEYS" "$MIB" "$WORK" "$(dirname "$PY")/aws"
