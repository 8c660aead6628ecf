#!/usr/bin/env bash
# Gapless benchmark: ticketd gapless sequences (relaxed and strict order) against MariaDB's usual
# gapless recipe (one counter row, SELECT ... FOR UPDATE, UPDATE, COMMIT; InnoDB with
# innodb_flush_log_at_trx_commit=1), same sysbench driver, same run. Prints commits/s and p99 at
# 1, 16 and 64 clients, the ratios, and ticketd's synced writes per committed number.
# Usage: bench/gapless.sh [seconds-per-run]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup  # MariaDB, the baseline, among the test peers
scripts/build build >/dev/null
exec /usr/bin/python3 bench/gapless_bench.py "${1:-10}"
