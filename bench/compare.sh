#!/usr/bin/env bash
# Side-by-side comparison of ticket sequences (cache 1 and 1000), hi-lo blocks, Snowflake,
# UUIDv7 and ULID, over MySQL and HTTP, with client-side UUIDv4 as the baseline: IDs/s, latency,
# bytes per ID, order across connections, kill -9 cost. Output is what docs/comparison.md
# quotes. Usage: bench/compare.sh [seconds] [clients] [rows: kind prefixes, e.g. ULID,UUIDv4]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup
scripts/build build >/dev/null
exec /usr/bin/python3 bench/compare.py "${1:-5}" "${2:-8}" "${3:-}"
