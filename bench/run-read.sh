#!/usr/bin/env bash
# Read-path load benchmark (BENCHMARKS.md, "Read path: GET /v2/transactions"):
# the real `finsync serve` (as configured by default, and again with its page
# cache off) against the naive bare handler (bench/naive), all on the same
# seeded database, under wrk with bench/wrk/rotate.lua, at limit=50 and
# limit=250, in one run. Prints a table of requests/s and p50/p99 latency and
# each server's throughput over the naive handler's.
#
# Environment (all optional):
#   DATABASE_URL    seeded database (default postgres://postgres@127.0.0.1:5432/finsync_bench?sslmode=disable)
#   BENCH_DIR       binaries, logs, keys and results (default /tmp/finsync-bench)
#   BENCH_KEYS      keys file written by bench/seed (default $BENCH_DIR/keys.txt)
#   BENCH_SEED=1    (re)seed first: 1,000 users, 1,000,000 transactions (also done when the keys file is missing)
#   BENCH_DURATION  wrk duration of each measured run (default 30s)
#   BENCH_WARMUP    wrk duration of each server's warm-up (default 10s)
#   BENCH_ROUNDS    how many times to repeat the whole comparison (default 1)
#   BENCH_CONNS     wrk connections at limit=50 (default 32)
#   BENCH_CONNS_EXPENSIVE  wrk connections at limit=250 (default 6, under the server's cap of 8 expensive requests)
#   FINSYNC_BIN     measure this finsync binary instead of building ./cmd/finsync (to try a change)
#   REAL_GOGC       GOGC for the real server only (default: unset, so finsync serve uses its own 400)
#   NAIVE_FLAGS     extra flags for bench/naive, e.g. -cache-auth (remember each key's user: the baseline then measures the listing alone)
set -euo pipefail
cd "$(dirname "$0")/.."

DB_URL=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/finsync_bench?sslmode=disable}
WORK=${BENCH_DIR:-/tmp/finsync-bench}
KEYS=${BENCH_KEYS:-$WORK/keys.txt}
DURATION=${BENCH_DURATION:-30s}
WARMUP=${BENCH_WARMUP:-10s}
ROUNDS=${BENCH_ROUNDS:-1}
REAL=127.0.0.1:18480
REAL_OPS=127.0.0.1:18490
UNCACHED=127.0.0.1:18483
UNCACHED_OPS=127.0.0.1:18493
NAIVE=127.0.0.1:18481

if ! command -v wrk >/dev/null; then
  echo "wrk is not installed; it is a Debian package: apt-get install -y wrk" >&2
  exit 1
fi
mkdir -p "$WORK"

if [ ! -s "$KEYS" ] || [ "${BENCH_SEED:-0}" = 1 ]; then
  echo "== seeding (1,000 users, 1,000,000 transactions)"
  go run ./bench/seed -database-url "$DB_URL" -users 1000 -transactions 1000000 -keys "$KEYS"
fi

echo "== building"
FINSYNC=${FINSYNC_BIN:-$WORK/finsync}
[ -n "${FINSYNC_BIN:-}" ] || go build -o "$WORK/finsync" ./cmd/finsync
go build -o "$WORK/naive" ./bench/naive

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT

# The seeded database may predate the binary's migrations.
DATABASE_URL="$DB_URL" "$FINSYNC" migrate >/dev/null

# The real server keeps its default (info) request logging; its stderr goes
# to a file, as it would to a log collector, never to a terminal. "real" is
# finsync serve as configured by default (its page cache on); "uncached" is
# the same binary with FINSYNC_PAGE_CACHE_MB=0, every request read from the
# database.
start_finsync() { # NAME ADDR OPS_ADDR [VAR=VALUE...]
  local name=$1 addr=$2 ops=$3
  shift 3
  env DATABASE_URL="$DB_URL" FINSYNC_CURSOR_KEY=load-benchmark-cursor-key-0123456789 \
    FINSYNC_ENCRYPTION_KEY=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef ${REAL_GOGC:+GOGC=$REAL_GOGC} "$@" \
    "$FINSYNC" serve --addr "$addr" --metrics-addr "$ops" >"$WORK/$name.stdout.log" 2>"$WORK/$name.stderr.log" &
  pids+=($!)
}
start_finsync finsync "$REAL" "$REAL_OPS"
start_finsync finsync-uncached "$UNCACHED" "$UNCACHED_OPS" FINSYNC_PAGE_CACHE_MB=0
"$WORK/naive" -addr "$NAIVE" -database-url "$DB_URL" ${NAIVE_FLAGS:-} >"$WORK/naive.log" 2>&1 &
pids+=($!)

key=$(head -n 1 "$KEYS")
wait_ok() { # URL: wait until it answers 200 with the first key
  for _ in $(seq 1 100); do
    code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $key" "$1" || true)
    [ "$code" = 200 ] && return 0
    sleep 0.1
  done
  echo "no 200 from $1 (last status $code); is $DB_URL seeded with the keys in $KEYS?" >&2
  exit 1
}
wait_ok "http://$REAL/v2/transactions?limit=50"
wait_ok "http://$UNCACHED/v2/transactions?limit=50"
wait_ok "http://$NAIVE/v2/transactions?limit=50"

# page_cache OPS_ADDR: the server's page cache outcomes so far (hit stale miss).
page_cache() {
  curl -s "http://$1/metrics" | awk '/^finsync_page_cache_requests_total/ { split($1, a, "\""); n[a[2]] = $2 }
    END { printf "hits=%d stale=%d misses=%d", n["hit"], n["stale"], n["miss"] }'
}

# Connections per run: 32 at limit=50; at limit=250, 6. A page over 100
# rows is an expensive request, and one server runs at most 8 of those at
# once (middleware.DefaultExpensivePerProcess), answering 429 past that, so
# 32 connections would measure refusals; at 8, a connection's next request
# can arrive before its previous one's slot is given back. Both servers get
# the same number.
conns_for() { # LIMIT
  if [ "$1" -gt 100 ]; then echo "${BENCH_CONNS_EXPENSIVE:-6}"; else echo "${BENCH_CONNS:-32}"; fi
}

run_wrk() { # LABEL URL LIMIT DURATION
  BENCH_LABEL=$1 wrk -t2 -c"$(conns_for "$3")" -d"$4" -s bench/wrk/rotate.lua "$2" -- "$KEYS" "$3" | grep '^RESULT'
}

echo "== warming up ($WARMUP each)"
run_wrk warmup-naive "http://$NAIVE" 50 "$WARMUP" >/dev/null
run_wrk warmup-real "http://$REAL" 50 "$WARMUP" >/dev/null
run_wrk warmup-uncached "http://$UNCACHED" 50 "$WARMUP" >/dev/null

results="$WORK/results-$(date -u +%Y%m%dT%H%M%SZ).txt"
for round in $(seq 1 "$ROUNDS"); do
  for limit in 50 250; do
    for target in naive real uncached; do
      case $target in
        naive) addr=$NAIVE ;;
        real) addr=$REAL ;;
        uncached) addr=$UNCACHED ;;
      esac
      echo "== round $round: $target limit=$limit ($DURATION)"
      line=$(run_wrk "$target" "http://$addr" "$limit" "$DURATION")
      # The 1-minute load average after the run tells how busy the machine was.
      echo "${line/RESULT /RESULT round=$round } load1=$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$results"
      [ "$target" = real ] && echo "   real's page cache since its start: $(page_cache "$REAL_OPS")"
    done
  done
done

echo
echo "== results ($results; wrk -t2 -d$DURATION, -c$(conns_for 50) at limit=50 and -c$(conns_for 250) at limit=250, $(nproc) cores)"
awk '
  function field(name,   i, kv) {
    for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] == name) return kv[2] }
    return ""
  }
  {
    key = field("round") " " field("limit")
    rps[key, field("label")] = field("rps")
    line[key, field("label")] = sprintf("%-5s %-6s %-8s %10s %9s %9s %7s %6s", field("round"), field("limit"), field("label"), field("rps"), field("p50_ms"), field("p99_ms"), field("non2xx") + field("errors"), field("load1"))
    if (!(key in seen)) { seen[key] = 1; order[++n] = key }
  }
  END {
    printf "%-5s %-6s %-8s %10s %9s %9s %7s %6s %6s\n", "round", "limit", "server", "req/s", "p50 ms", "p99 ms", "errors", "load1", "ratio"
    for (i = 1; i <= n; i++) {
      k = order[i]
      print line[k, "naive"]
      for (j = 1; j <= 2; j++) {
        t = j == 1 ? "real" : "uncached"
        ratio = rps[k, "naive"] > 0 ? sprintf("%.2f", rps[k, t] / rps[k, "naive"]) : "-"
        printf "%s %6s\n", line[k, t], ratio
      }
    }
  }' "$results"
