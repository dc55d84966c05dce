#!/usr/bin/env bash
# BPF cost of two rssauditd builds on the very same updates: both daemons
# attached at once (on CPU 1), the fault loop on CPU 0, and bpf_stats'
# ns per run of each one's on_rss_stat. The program attached first runs
# first and pays the cold cache lines of the mm and task (~100 ns here), so
# the order alternates and each position is reported apart. On a shared,
# noisy host this resolves ~10 ns, where interleaved runs of the fault loop
# (capture_overhead.sh) resolve ~100.
# Usage (root): bench/bpf_cost_pair.sh BUILD_DIR DAEMON_A DAEMON_B [ROUNDS]
set -euo pipefail
build=${1:?usage: bpf_cost_pair.sh BUILD_DIR DAEMON_A DAEMON_B [ROUNDS]}
daemon_a=${2:?usage: bpf_cost_pair.sh BUILD_DIR DAEMON_A DAEMON_B [ROUNDS]}
daemon_b=${3:?usage: bpf_cost_pair.sh BUILD_DIR DAEMON_A DAEMON_B [ROUNDS]}
rounds=${4:-8}
loop="$build/bench/fault_loop"
work=$(mktemp -d)
sysctl -qw kernel.bpf_stats_enabled=1
trap 'sysctl -qw kernel.bpf_stats_enabled=0; rm -rf "$work"' EXIT

started=""
start() {  # $1: a | b, $2: log name; sets $started to the daemon's pid
  local daemon=$daemon_a
  [ "$1" = b ] && daemon=$daemon_b
  taskset -c 1 "$daemon" --db "$work/$2.db" --socket none >"$work/$2.log" 2>&1 &
  started=$!
}

declare -A runs  # "a first", "b second", ...: ns/run per round
for ((r = 0; r < rounds; r++)); do
  if ((r % 2)); then order="b a"; else order="a b"; fi
  set -- $order
  start "$1" first
  first=$started
  sleep 0.7
  start "$2" second
  second=$started
  sleep 0.7
  "$loop" 4 0 >/dev/null
  # Program ids grow with each load: the lower id is the first daemon's.
  read -r ns_first ns_second < <(bpftool prog show --json | python3 -c '
import json, sys
progs = sorted((p["id"], p["run_time_ns"] / p["run_cnt"])
               for p in json.load(sys.stdin)
               if p.get("name") == "on_rss_stat" and p.get("run_cnt"))
if len(progs) != 2:
    sys.exit("expected 2 on_rss_stat programs, found %d" % len(progs))
print("%.1f %.1f" % (progs[0][1], progs[1][1]))')
  kill -INT "$first" "$second"
  wait "$first" "$second" || true
  runs["$1 first"]+="$ns_first "
  runs["$2 second"]+="$ns_second "
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for position in first second; do
  for which in a b; do
    printf '%s %-6s median %6.1f ns/run  [%s]\n' "$which" "$position" \
      "$(echo "${runs[$which $position]}" | median)" \
      "${runs[$which $position]% }"
  done
done
echo "a = $daemon_a"
echo "b = $daemon_b"
