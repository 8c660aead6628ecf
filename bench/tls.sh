#!/usr/bin/env bash
# The cost of TLS on tickets/s (issue 14): the same workloads with and without TLS in one run, at
# 64 connections on 127.0.0.1: HTTP POST .../next (wrk, http:// and https://, keep-alive) and
# MySQL SELECT NEXTVAL (sysbench, --mysql-ssl off and on: one TLS handshake per connection, then
# every ticket inside TLS). Interleaved rounds; medians and the TLS/plain ratio.
# Usage: bench/tls.sh [seconds-per-run (default 10)] [rounds (default 3)]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
rounds=${2:-3}
scripts/setup
scripts/build build >/dev/null
work=$(mktemp -d /tmp/ticketd-tls.XXXXXX)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 bench/tls_bench.py "$seconds" "$rounds" "$work"
