#!/usr/bin/env bash
# Instructions per request inside ticketd on each hot path (MySQL NEXTVAL text and prepared, the
# Flickr recipe, HTTP next, an HTTP block lease), counted by callgrind on one connection: stable
# where wall-clock figures are not. Installs valgrind if missing.
# Usage: bench/callgrind.sh [requests (5000)] [binary (build/ticketd)]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup >/dev/null
if ! command -v valgrind >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q valgrind >/tmp/ticketd-valgrind-apt.log 2>&1 ||
    { cat /tmp/ticketd-valgrind-apt.log >&2; exit 1; }
fi
[[ $# -ge 2 ]] || scripts/build build >/dev/null
exec /usr/bin/python3 bench/callgrind_bench.py "$@"
