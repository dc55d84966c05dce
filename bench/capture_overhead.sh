#!/usr/bin/env bash
# Cost of capture on a fault loop (bench/fault_loop: 64 MiB mmap, touch,
# munmap, pinned to CPU 0; ~1 rss_stat update per page), interleaved in one
# run: no tracer, an empty tp_btf/rss_stat program (bench/tp_floor: the
# hook's floor, what any capture on it pays), rssauditd attached (on CPU 1),
# and the bpftrace one-liner.
# Prints median ns per page for each, the added ns per event and ratios, and
# the BPF programs' own ns per event from kernel.bpf_stats_enabled, with the
# event rate and drops of that run.
# Usage (root): bench/capture_overhead.sh BUILD_DIR [ROUNDS]
# RSSAUDITD=path measures another daemon build; COMPARE=path adds a second
# daemon build, interleaved with the first (before/after comparisons).
set -euo pipefail
build=${1:?usage: capture_overhead.sh BUILD_DIR [ROUNDS]}
rounds=${2:-7}
loop="$build/bench/fault_loop"
daemon="${RSSAUDITD:-$build/daemon/rssauditd}"
modes="none floor rssauditd${COMPARE:+ compare} bpftrace"
mountpoint -q /sys/kernel/tracing ||
  mount -t tracefs nodev /sys/kernel/tracing
# Other captures (a test's daemon, a tracer) tax every fault of the loop too.
foreign=$(bpftool prog show | grep -c 'name on_rss_stat' || true)
echo "foreign on_rss_stat programs attached: $foreign"

run_with() {  # $1: one of $modes; prints ns/page
  local pid=""
  case $1 in
    rssauditd|compare)
      local bin=$daemon
      [ "$1" = compare ] && bin=$COMPARE
      taskset -c 1 "$bin" >/tmp/rssaudit-bench-daemon.log 2>&1 &
      pid=$!; sleep 1 ;;
    floor)     "$build/bench/tp_floor" &
               pid=$!; sleep 1 ;;
    bpftrace)  taskset -c 1 bpftrace -e \
                 'tracepoint:kmem:rss_stat { @ = count(); }' >/dev/null 2>&1 &
               pid=$!; sleep 3 ;;
  esac
  "$loop" 10 0
  if [ -n "$pid" ]; then kill -INT "$pid"; wait "$pid" 2>/dev/null || true; fi
}

declare -A all
for ((r = 0; r < rounds; r++)); do
  for mode in $modes; do
    all[$mode]+="$(run_with $mode) "
  done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
base=$(echo "${all[none]}" | median)
for mode in $modes; do
  m=$(echo "${all[$mode]}" | median)
  awk -v mode=$mode -v m="$m" -v b="$base" 'BEGIN {
    printf "%-10s median %7.1f ns/page  added %6.1f ns/event  ratio %.2fx\n",
           mode, m, m - b, m / b }'
done

# The BPF side alone: run time per invocation of each capture program. Only
# here: the statistics add two clock reads to every program run.
sysctl -qw kernel.bpf_stats_enabled=1
trap 'sysctl -qw kernel.bpf_stats_enabled=0' EXIT
taskset -c 1 "$daemon" >/tmp/rssaudit-bench-daemon.log 2>&1 &
pid=$!
sleep 1
ns=$("$loop" 20 0)
bpftool prog show --json | python3 -c '
import json, sys
for p in json.load(sys.stdin):
    if p.get("run_cnt") and p.get("name", "").startswith(("handle_", "rss", "on_")):
        print("bpf %-24s %10d runs %7.1f ns/run" %
              (p["name"], p["run_cnt"], p["run_time_ns"] / p["run_cnt"]))'
kill -INT "$pid"; wait "$pid" 2>/dev/null || true
sysctl -qw kernel.bpf_stats_enabled=0
awk -v ns="$ns" -v d="$(grep -o 'drops=[0-9]*' /tmp/rssaudit-bench-daemon.log |
  tail -1)" 'BEGIN { printf "rate %.0f events/s on CPU 0, %s\n", 1e9 / ns, d }'
