-- rotate.lua: wrk script for the read-path load benchmark (BENCHMARKS.md).
--
--   wrk -t2 -c32 -d30s -s bench/wrk/rotate.lua http://127.0.0.1:18480 -- KEYS_FILE LIMIT [LABEL]
--
-- Every request carries the next user's API key from KEYS_FILE (one key a
-- line), so the load rotates over all users; thread i of BENCH_THREADS
-- (default 2, as the scripts run wrk with -t2) takes keys i+1, i+1+T, ...,
-- so that two threads never send one key at once: a key has one slot for
-- expensive requests, and threads starting at different offsets caught up
-- with each other and were refused in bursts. Requests go
-- to /v2/transactions?limit=LIMIT (BENCH_PATH replaces /v2/transactions,
-- for example /v2/transfers). done() prints one machine-readable line:
--
--   RESULT label=LABEL limit=50 requests=... rps=... p50_ms=... p99_ms=... max_ms=... non2xx=... errors=...
--
-- LABEL comes from the BENCH_LABEL environment variable; non2xx counts
-- responses with status 400 or above (wrk's "Non-2xx or 3xx responses").

local threads = {}
local next_id = 0

function setup(thread)
  thread:set("id", next_id)
  next_id = next_id + 1
  table.insert(threads, thread)
end

-- Per-thread state (each wrk thread runs its own copy of the script).
keys = {}
pos = 1
step = 1
path = "/v2/transactions?limit=50"

function init(args)
  local file = args[1] or error("rotate.lua: pass the keys file after --")
  local limit = args[2] or "50"
  path = (os.getenv("BENCH_PATH") or "/v2/transactions") .. "?limit=" .. limit
  for line in io.lines(file) do
    if line ~= "" then
      keys[#keys + 1] = line
    end
  end
  if #keys == 0 then
    error("rotate.lua: no keys in " .. file)
  end
  step = tonumber(os.getenv("BENCH_THREADS") or "2")
  pos = id % step + 1
end

function request()
  local key = keys[pos]
  pos = pos + step
  if pos > #keys then
    pos = pos - #keys
  end
  return wrk.format("GET", path, { ["Authorization"] = "Bearer " .. key })
end

function done(summary, latency, requests)
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout
  local seconds = summary.duration / 1e6
  local limit = string.match(threads[1]:get("path"), "limit=(%d+)") or "?"
  io.write(string.format(
    "RESULT label=%s limit=%s requests=%d rps=%.1f p50_ms=%.2f p99_ms=%.2f max_ms=%.2f non2xx=%d errors=%d\n",
    os.getenv("BENCH_LABEL") or "run", limit, summary.requests,
    summary.requests / seconds, latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    latency.max / 1000, summary.errors.status, errors))
end
