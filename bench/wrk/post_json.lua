-- wrk script for ticketd's HTTP API: every request is `POST <path>` with a JSON body, on
-- kept-alive connections. Arguments after `--`: the path and the body (default: one ticket).
--   wrk -t2 -c64 -d10s --latency -s bench/wrk/post_json.lua http://127.0.0.1:8080 \
--       -- /v1/sequences/Tickets64/blocks '{"size":1000}'
-- done() prints one machine-readable line for bench/http.sh:
--   RESULT requests=N duration_us=N rps=N p50_us=N p99_us=N max_us=N non2xx=N socket_errors=N

local path = "/v1/sequences/Tickets64/next"
local body = "{}"

function init(args)
  if args[1] then path = args[1] end
  if args[2] then body = args[2] end
  -- Built once per thread: every request is the same bytes.
  wrk.method = "POST"
  wrk.body = body
  wrk.headers["Content-Type"] = "application/json"
  req = wrk.format("POST", path)
end

function request()
  return req
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d duration_us=%d rps=%.1f p50_us=%d p99_us=%d max_us=%d" ..
      " non2xx=%d socket_errors=%d\n",
    summary.requests, summary.duration, summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(99), latency.max,
    e.status, e.connect + e.read + e.write + e.timeout))
end
