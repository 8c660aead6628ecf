#!/usr/bin/env bash
# Peers benchmark (issue 13): ticketd side by side with what a team would run instead, on this
# box, in the same run, on 127.0.0.1 with private data dirs: nginx `return 200` (the HTTP floor),
# Redis INCR with appendfsync always, PostgreSQL nextval with fsync=on, MariaDB's MyISAM Flickr
# table and its no-write floor. Each workload runs ROUNDS times, interleaved, at 64 connections;
# one table of medians (IDs/s, p99) and the issue's goals as ratios, each met or missed.
# Usage: bench/peers.sh [seconds-per-run (default 10)] [rounds (default 3)]
# A default run takes about 7 minutes: 11 workloads x 3 rounds x 10 s, a warm-up and startup.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
rounds=${2:-3}
scripts/setup

# The peers, from Debian; postinst must not start system instances (policy-rc.d says no), and a
# policy-rc.d already there (Docker images ship one) is left as it was.
peer_packages=(mariadb-server redis-server redis-tools postgresql postgresql-client nginx-light)
missing=()
for p in "${peer_packages[@]}"; do
  [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" == "install ok installed" ]] ||
    missing+=("$p")
done
# Any nginx flavour will do.
if command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]]; then
  missing=("${missing[@]/nginx-light/}")
fi
read -r -a missing <<<"${missing[*]}"
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "peers: installing ${missing[*]}"
  made_policy=0
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    made_policy=1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q "${missing[@]}" >/tmp/ticketd-peers-apt.log 2>&1 || {
    apt-get update -q >/dev/null 2>&1
    apt-get install -y -q "${missing[@]}" >/tmp/ticketd-peers-apt.log 2>&1
  } || { cat /tmp/ticketd-peers-apt.log >&2; exit 1; }
  [[ $made_policy -eq 0 ]] || rm -f /usr/sbin/policy-rc.d
fi
scripts/build build >/dev/null

work=$(mktemp -d /tmp/ticketd-peers.XXXXXX)
driver=""
cleanup() {
  [[ -z "$driver" ]] || kill "$driver" 2>/dev/null || true
  [[ -z "$driver" ]] || wait "$driver" 2>/dev/null || true
  # Whatever a killed driver left running: it writes every server's pid here as it starts it
  # and removes the file once all have stopped. A pid counts only while the process still runs
  # in $work (command line or working directory), so a reused pid is never touched.
  if [[ -f "$work/pids" ]]; then
    local pid sig
    for sig in TERM KILL; do
      while read -r pid; do
        if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$work" ||
          [[ "$(readlink "/proc/$pid/cwd" 2>/dev/null)" == "$work"* ]]; then
          kill -"$sig" "$pid" 2>/dev/null || true
        fi
      done <"$work/pids"
      [[ $sig == KILL ]] || sleep 2
    done
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

/usr/bin/python3 bench/peers_bench.py "$seconds" "$rounds" "$work" &
driver=$!
status=0
wait "$driver" || status=$?
driver=""
exit "$status"
