#!/usr/bin/env bash
# MySQL front end benchmark: ticketd against a local MariaDB, same sysbench ticket script, same run.
# Prints tickets/s and p99 at 1, 16 and 64 threads, the ratios to MariaDB, and the RSS of ticketd
# holding 10,000 idle connections. Usage: bench/mysql.sh [seconds-per-run]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup
if ! command -v mariadbd >/dev/null && [[ ! -x /usr/sbin/mariadbd ]]; then
  # The baseline server; postinst must not start a system instance.
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q mariadb-server >/dev/null
  rm -f /usr/sbin/policy-rc.d
fi
scripts/build build >/dev/null
exec /usr/bin/python3 bench/mysql_bench.py "${1:-10}"
