#!/usr/bin/env bash
# HA benchmark: a real three-member etcd cluster on loopback with one ticketd on it, and one
# ticketd on RocksDB. Prints tickets/s at 64 connections on etcd vs RocksDB (sysbench, the Flickr
# recipe, cache 1000) with the ratio, and gapless commits/s at 16 clients on etcd with synced
# writes per commit. Usage: bench/ha.sh [seconds-per-run (10)] [rounds (3)]: the ticket figures
# are medians of the rounds, the engines taking turns to run first.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup
scripts/build build >/dev/null
exec /usr/bin/python3 bench/ha_bench.py "${1:-10}" "${2:-3}"
