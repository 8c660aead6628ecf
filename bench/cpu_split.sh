#!/usr/bin/env bash
# Where the CPU of a MySQL round trip goes: server and sysbench, user and system time per event,
# for MariaDB's floor and ticketd (floor, Flickr recipe, NEXTVAL) at 64 and 16 connections.
# Usage: bench/cpu_split.sh [seconds-per-run] [connections ...]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup  # MariaDB, the baseline, among the test peers
scripts/build build >/dev/null
exec /usr/bin/python3 bench/cpu_split_bench.py "$@"
