#!/usr/bin/env bash
# A/B benchmark of two ticketd binaries on the hot paths (MySQL NEXTVAL text and prepared, the
# Flickr recipe, HTTP next, HTTP blocks of 1,000), interleaved rounds at 64 connections, medians
# and the ratio B/A. For a change to the hot paths: build the old commit's binary aside, e.g.
#   git worktree add /tmp/old HEAD~1 && scripts/build /tmp/old/build   (or copy build/ticketd)
#   bench/ab.sh /tmp/old/build/ticketd build/ticketd [seconds (10)] [rounds (3)]
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -ge 2 ]] || { sed -n '2,6p' "$0" >&2; exit 2; }
scripts/setup >/dev/null
exec /usr/bin/python3 bench/ab_bench.py "$@"
