#!/usr/bin/env bash
# Engine benchmark: builds bench/engine_bench in Release and prints medians of 5 repetitions
# against the goals (cached path > 20M values/s on one thread; one synced write per `cache`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup
scripts/build build >/dev/null
out=$(mktemp)
build/bench/engine_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_format=json --benchmark_out="$out" --benchmark_out_format=json >/dev/null
python3 - "$out" <<'PY'
import json, sys
runs = {b["name"]: b for b in json.load(open(sys.argv[1]))["benchmarks"] if b.get("aggregate_name") == "median"}
def get(prefix):
    for name, b in runs.items():
        if name.startswith(prefix):
            return b
    raise SystemExit(f"missing {prefix}")
def rate(b): return b["items_per_second"]
c1 = get("BM_NextCachedPath/real_time/threads:1")
c2 = get("BM_NextCachedPath/real_time/threads:2")
r1 = get("BM_NextRocksDbCache1000/real_time/threads:1")
r2 = get("BM_NextRocksDbCache1000/real_time/threads:2")
blk = get("BM_NextBlock1000/real_time")
w = get("BM_SyncedCeilingWrite/real_time")
print("engine benchmark (medians of 5 repetitions, one run)")
print(f"  next(), cached path, 1 thread      {rate(c1)/1e6:8.1f} M values/s   (goal > 20 M/s: {'met' if rate(c1) > 20e6 else 'NOT met'})")
print(f"  next(), cached path, 2 threads     {rate(c2)/1e6:8.1f} M values/s   (ratio to 1 thread {rate(c2)/rate(c1):.2f})")
print(f"  next(), RocksDB cache 1000, 1 thr  {rate(r1)/1e6:8.2f} M values/s   ({r1.get('values_per_write', 0):.0f} values per synced write)")
print(f"  next(), RocksDB cache 1000, 2 thr  {rate(r2)/1e6:8.2f} M values/s")
print(f"  next_block(1000)                   {blk['blocks_per_s']:8.0f} blocks/s     ({rate(blk)/1e6:.1f} M values/s)")
print(f"  one synced ceiling write (cache 1) {w['real_time']:8.1f} us")
PY
rm -f "$out"
