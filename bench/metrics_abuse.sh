#!/usr/bin/env bash
# What scrapers asking as fast as they can cost rssauditd: its CPU (user +
# system, points of one CPU) over SECONDS with no scraper, then with LOOPS
# scrapers asking /metrics back to back (loops of curl; long-lived
# kept-alive clients), with PROCESSES live processes and
# --metrics-processes 1000 (the largest body). The daemon renders each
# format at most once a second (min_render_interval) and holds a scrape
# over its peer's limit to the next second, so the loops should move its
# CPU by a few points at most.
# Usage (root): bench/metrics_abuse.sh BUILD [LOOPS] [PROCESSES] [SECONDS]
# (BUILD: a build directory with rssauditd and soak_workload.)
set -euo pipefail
build=${1:?usage: metrics_abuse.sh BUILD [LOOPS] [PROCESSES] [SECONDS]}
loops=${2:-8}
processes=${3:-1000}
seconds=${4:-20}
port=19464
dir=$(mktemp -d)
daemon=$build/daemon/rssauditd workload=$build/tests/soak/soak_workload
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  kill -KILL "${pool:-0}" 2>/dev/null || true
  kill -TERM "${pid:-0}" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
cpu_ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
# Points of one CPU the daemon used over $seconds.
cpu_points() {
  local a b
  a=$(cpu_ticks)
  sleep "$seconds"
  b=$(cpu_ticks)
  echo "scale=1; 100 * ($b - $a) / $(getconf CLK_TCK) / $seconds" | bc
}

"$workload" pool "$processes" 5000 "$dir/pool.status" >/dev/null 2>&1 &
pool=$!
"$daemon" --db "$dir/h.db" --socket none --metrics-listen "127.0.0.1:$port" \
  --metrics-processes 1000 2>"$dir/d.log" &
pid=$!
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  sleep 0.2
done
sleep 15  # every process audited and sampled once
bytes=$(curl -s "http://127.0.0.1:$port/metrics" | wc -c)
echo "scrape body: $bytes bytes"
echo "daemon CPU, no scraper: $(cpu_points) points"
# Each phase's loops run for it, then are killed.
phase() {  # WHAT COMMAND...: the daemon's CPU while LOOPS copies run
  local what=$1 p
  shift
  for _ in $(seq "$loops"); do
    "$@" &
    pids+=($!)
  done
  sleep 1
  echo "daemon CPU, $loops $what: $(cpu_points) points"
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  wait "${pids[@]}" 2>/dev/null || true
  pids=()
}
# A curl per scrape is a process per scrape, which the daemon audits: the
# same loops asking a closed port show what that churn costs by itself.
curl_loop() { while :; do curl -s "$1" >/dev/null; done; }
phase "curl loops on a closed port (the churn alone)" curl_loop "http://127.0.0.1:1/"
phase "curl loops scraping" curl_loop "http://127.0.0.1:$port/metrics"
# A long-lived client asking back to back on a kept-alive connection,
# opening another when the daemon closes it: no churn, every request
# served (a 429 at once took the daemon from 6 to 34 points).
cat >"$dir/scrape.py" <<'PY'
import http.client, sys
port = int(sys.argv[1])
conn = None
while True:
    try:
        if conn is None:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/metrics")
        r = conn.getresponse()
        r.read()
        if r.will_close:
            conn.close(); conn = None
    except Exception:
        if conn is not None:
            conn.close()
        conn = None
PY
phase "kept-alive clients scraping" python3 "$dir/scrape.py" "$port"
echo "daemon CPU, no scraper again: $(cpu_points) points"
kill -TERM "$pid"
wait "$pid" || true
grep '^metrics accepted' "$dir/d.log" | tail -1
