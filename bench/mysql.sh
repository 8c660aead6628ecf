#!/usr/bin/env bash
# MySQL front end benchmark: ticketd against a local MariaDB, same sysbench ticket script, same run.
# Prints tickets/s and p99 at 1, 16 and 64 threads, the ratios to MariaDB, and the RSS of ticketd
# holding 10,000 idle connections. Usage: bench/mysql.sh [seconds-per-run]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup  # MariaDB, the baseline, among the test peers
scripts/build build >/dev/null
exec /usr/bin/python3 bench/mysql_bench.py "${1:-10}"
