#!/usr/bin/env bash
# HTTP benchmark: starts build/ticketd on a temporary data dir and free loopback ports (shipped
# defaults: cache 1000, one I/O thread per core) and drives it with wrk, keep-alive, 64
# connections, for single tickets (POST /v1/sequences/Tickets64/next) and for 1000-value blocks
# (POST /v1/sequences/Tickets64/blocks {"size":1000}). Each case runs 3 times after a warm-up;
# the medians are compared with the goals: >= 50,000 single-ticket requests/s with p99 < 2 ms,
# >= 50 million IDs/s through 1000-value blocks. wrk runs on the same machine as ticketd, so
# the figures include the load generator's share of the cores.
#   bench/http.sh                      BENCH_DURATION=30s bench/http.sh
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${BENCH_DURATION:-10s}
connections=64
wrk_threads=2
runs=3
sequence=Tickets64

scripts/setup
scripts/build build >/dev/null

work=$(mktemp -d /tmp/ticketd-bench-http.XXXXXX)
pid=""
cleanup() {
  if [[ -n "$pid" ]]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# Two distinct free ports, both held open until both are known.
read -r mysql_port http_port < <(python3 -c '
import socket
a, b = socket.socket(), socket.socket()
a.bind(("127.0.0.1", 0)); b.bind(("127.0.0.1", 0))
print(a.getsockname()[1], b.getsockname()[1])')

cat >"$work/ticketd.yaml" <<EOF
data_dir: $work/data
log_level: warn
mysql:
  listen: 127.0.0.1:$mysql_port
  users:
    - { name: ticket, password: ticket }
http:
  listen: 127.0.0.1:$http_port
sequences:
  - { name: $sequence, kind: ticket }
EOF

build/ticketd --config "$work/ticketd.yaml" >"$work/ticketd.log" 2>&1 &
pid=$!
base="http://127.0.0.1:$http_port"
for _ in $(seq 300); do
  curl -sf "$base/readyz" >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { cat "$work/ticketd.log" >&2; exit 1; }
  sleep 0.1
done
curl -sf "$base/readyz" >/dev/null || { echo "ticketd did not become ready" >&2; exit 1; }

next_value() {
  curl -sf "$base/v1/sequences/$sequence" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["next_value"])'
}

# run_case LABEL IDS_PER_REQUEST PATH BODY: a warm-up, then $runs measured runs; appends
# "LABEL IDS_PER_REQUEST <RESULT fields> server_ids=N" per run to $work/results.
run_case() {
  local label=$1 per_request=$2 path=$3 body=$4
  local cmd=(wrk -t"$wrk_threads" -c"$connections" -d"$duration" --latency
             -s bench/wrk/post_json.lua "$base" -- "$path" "$body")
  echo "  $label: $(printf '%q ' "${cmd[@]}")"
  wrk -t"$wrk_threads" -c"$connections" -d2s -s bench/wrk/post_json.lua "$base" -- \
    "$path" "$body" >/dev/null
  for run in $(seq "$runs"); do
    local before after line
    before=$(next_value)
    "${cmd[@]}" >"$work/wrk.out"
    after=$(next_value)
    line=$(grep '^RESULT ' "$work/wrk.out") || { cat "$work/wrk.out" >&2; exit 1; }
    echo "$label $per_request ${line#RESULT } server_ids=$((after - before))" >>"$work/results"
    echo "    run $run: ${line#RESULT }"
  done
}

echo "ticketd HTTP benchmark on $(nproc) cores (shared by ticketd and wrk)," \
  "$runs runs of $duration each"
run_case singles 1 "/v1/sequences/$sequence/next" '{}'
run_case blocks 1000 "/v1/sequences/$sequence/blocks" '{"size":1000}'
kill -0 "$pid" 2>/dev/null || { echo "ticketd died during the benchmark" >&2; exit 1; }

python3 - "$work/results" <<'PY'
import statistics
import sys

runs = {}
for line in open(sys.argv[1]):
    label, per_request, *fields = line.split()
    r = dict(f.split("=") for f in fields)
    r = {k: float(v) for k, v in r.items()}
    r["ids_per_s"] = r["rps"] * int(per_request)
    r["server_ids_per_s"] = r["server_ids"] / (r["duration_us"] / 1e6)
    runs.setdefault(label, []).append(r)

def median(label, key):
    return statistics.median(r[key] for r in runs[label])

def verdict(ok):
    return "met" if ok else "NOT met"

failed = [(label, r) for label, rs in runs.items() for r in rs
          if r["non2xx"] or r["socket_errors"]]
s_rps, s_p99 = median("singles", "rps"), median("singles", "p99_us") / 1000
b_rps, b_p99 = median("blocks", "rps"), median("blocks", "p99_us") / 1000
b_ids, b_server = median("blocks", "ids_per_s"), median("blocks", "server_ids_per_s")
print(f"medians of {len(runs['singles'])} runs")
print(f"  single tickets     {s_rps:10,.0f} requests/s   p99 {s_p99:6.2f} ms"
      f"   (goal >= 50,000 requests/s: {verdict(s_rps >= 50_000)};"
      f" p99 < 2 ms: {verdict(s_p99 < 2)})")
print(f"  1000-value blocks  {b_rps:10,.0f} requests/s   p99 {b_p99:6.2f} ms"
      f"   = {b_ids / 1e6:.1f} M IDs/s (server-side count {b_server / 1e6:.1f} M IDs/s)"
      f"   (goal >= 50 M IDs/s: {verdict(b_ids >= 50e6)})")
for label, r in failed:
    print(f"  WARNING: a {label} run had {r['non2xx']:.0f} non-2xx answers and "
          f"{r['socket_errors']:.0f} socket errors")
sys.exit(1 if failed else 0)
PY
