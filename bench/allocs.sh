#!/usr/bin/env bash
# Heap allocations per request on the hot paths (MySQL text and prepared NEXTVAL, the Flickr
# recipe, HTTP next), counted inside a Release ticketd with a preloaded counter.
# Usage: bench/allocs.sh [requests]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup
scripts/build build >/dev/null
exec /usr/bin/python3 bench/allocs_bench.py "${1:-20000}"
