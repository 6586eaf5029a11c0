-- rotate.lua: wrk script for the read-path load benchmark (BENCHMARKS.md).
--
--   wrk -t2 -c32 -d30s -s bench/wrk/rotate.lua http://127.0.0.1:18480 -- KEYS_FILE LIMIT [LABEL]
--
-- Every request carries the next user's API key from KEYS_FILE (one key a
-- line), so the load rotates over all users; each thread starts at its own
-- offset into the keys so that threads do not walk in lockstep. Requests go
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
  -- Start each thread at its own point in the keys (golden-ratio steps,
  -- so any number of threads stays apart; 0 and 618 of 1,000 for two).
  local frac = (id * 0.6180339887) % 1
  pos = math.floor(#keys * frac) % #keys + 1
end

function request()
  local key = keys[pos]
  pos = pos + 1
  if pos > #keys then
    pos = 1
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
