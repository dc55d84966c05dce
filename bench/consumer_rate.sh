#!/usr/bin/env bash
# How many records per second rssauditd's consumer takes without a drop:
# rssauditd on CPU 1, bench/inject_rate replaying a recording into its own
# streams from CPU 0 at each rate, SECONDS each. Prints, per rate, the
# rate reached, the drops, rssauditd's CPU ns per record, its peak RSS and
# its summary.
# Usage (root): bench/consumer_rate.sh BUILD_DIR RECORDING [SECONDS] [RATE...]
# (make RECORDING with `rssaudit record`, as for bench/replay_cost).
# WARM=1 keeps CPU 1 busy with an idle-priority spinner that yields to the
# daemon: the daemon's CPU time is then its code's alone, without the cost
# of waking an idle CPU (caches and clocks; ~2x per record here).
# THREADS=1|2|auto: rssauditd's --consumer-threads (default: its own);
# DAEMON_CPUS: the CPUs it may run on (default 1; 2 threads on CPU 1 alone
# share it, so give them 0,1 to measure the second core).
set -euo pipefail
build=${1:?usage: consumer_rate.sh BUILD_DIR RECORDING [SECONDS] [RATE...]}
recording=${2:?usage: consumer_rate.sh BUILD_DIR RECORDING [SECONDS] [RATE...]}
seconds=${3:-10}
shift $(($# < 3 ? $# : 3))
rates=("${@:-1000000}")
db=$(mktemp -d)/consumer_rate.db
log=$(mktemp)
if [ -n "${WARM:-}" ]; then
  chrt -i 0 taskset -c 1 sh -c 'while :; do :; done' &
  spinner=$!
  trap 'kill $spinner' EXIT
fi
for rate in "${rates[@]}"; do
  rm -f "$db"
  taskset -c "${DAEMON_CPUS:-1}" "$build/daemon/rssauditd" --db "$db" \
    --socket none ${THREADS:+--consumer-threads "$THREADS"} >"$log" 2>&1 &
  pid=$!
  sleep 2
  "$build/bench/inject_rate" "$recording" "$rate" "$seconds" 0 "$pid" || true
  echo "rssauditd peak RSS: $(awk '/VmHWM/ { print $2, $3 }' "/proc/$pid/status")"
  kill -USR1 "$pid"; sleep 0.5
  kill -INT "$pid"; wait "$pid" || true
  grep '^summary' "$log" | tail -1 | cut -d' ' -f4-11
  grep -o 'consumer_threads=[^ ]* drain_waits=[^ ]*' "$log" | tail -1
done
