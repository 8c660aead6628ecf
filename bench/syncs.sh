#!/usr/bin/env bash
# Syncs per ceiling raise with and without durability.external_mark, counted by strace.
# Installs strace if missing.
# Usage: bench/syncs.sh [tickets] [block]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup >/dev/null
if ! command -v strace >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q strace >/tmp/ticketd-strace-apt.log 2>&1 ||
    { cat /tmp/ticketd-strace-apt.log >&2; exit 1; }
fi
scripts/build build >/dev/null
exec /usr/bin/python3 bench/syncs_bench.py "$@"
