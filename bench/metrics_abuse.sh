#!/usr/bin/env bash
# What scrapers asking as fast as they can cost rssauditd: its CPU (user +
# system, points of one CPU) over SECONDS with no scraper, then with LOOPS
# loops of curl scraping /metrics back to back, with PROCESSES live
# processes and --metrics-processes 1000 (the largest body). The daemon
# renders each format at most once a second (min_render_interval), so
# the loops should move its CPU by a few points at most.
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
for _ in $(seq "$loops"); do
  (while :; do curl -s "http://127.0.0.1:$port/metrics" >/dev/null; done) &
  pids+=($!)
done
sleep 1
echo "daemon CPU, $loops scrape loops: $(cpu_points) points"
for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
pids=()
echo "daemon CPU, no scraper again: $(cpu_points) points"
kill -TERM "$pid"
wait "$pid" || true
grep '^metrics accepted' "$dir/d.log" | tail -1
