#!/usr/bin/env bash
# Index locality: ticket, Snowflake, UUIDv7, ULID and UUIDv4 keys (UUIDv4, made with getrandom(2),
# is the baseline: what users would use without ticketd). Per scheme: generation cost (ns per ID),
# bytes per key as text and binary, then N keys inserted in binary form into a fresh
# RocksDbCounterStore, 10,000 per synced commit: inserts/s and the on-disk size (bench/
# locality_bench.cpp says exactly what is measured). Writes the figures as JSON and draws
# docs/images/locality.png from them (bench/locality_plot.py; installs python3-matplotlib if
# missing: a bench dependency, not a test one). docs/comparison.md quotes a run.
# Usage: bench/locality.sh [keys per scheme (10000000)] [json (bench/locality.json)]
# 10 M keys take about 10 minutes on 2 cores and up to ~1 GB under ${TMPDIR:-/tmp} at a time.
set -euo pipefail
cd "$(dirname "$0")/.."
keys=${1:-10000000}
json=${2:-bench/locality.json}
scripts/setup
if [[ "$(dpkg-query -W -f='${Status}' python3-matplotlib 2>/dev/null || true)" != "install ok installed" ]]; then
  echo "locality: installing python3-matplotlib"
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get install -y -q python3-matplotlib >/tmp/ticketd-locality-apt.log 2>&1 || {
    $sudo apt-get update -q >/dev/null 2>&1
    $sudo apt-get install -y -q python3-matplotlib >/tmp/ticketd-locality-apt.log 2>&1
  } || { cat /tmp/ticketd-locality-apt.log >&2; exit 1; }
fi
scripts/build build >/dev/null

work=$(mktemp -d "${TMPDIR:-/tmp}/ticketd-locality.XXXXXX")
trap 'rm -rf "$work"' EXIT
build/bench/locality_bench --dir "$work/stores" --keys "$keys" --json "$json"
/usr/bin/python3 bench/locality_plot.py "$json" docs/images/locality.png
echo "locality: figures in $json, plot in docs/images/locality.png"
