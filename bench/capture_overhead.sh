#!/usr/bin/env bash
# Cost of capture on a fault loop (bench/fault_round.h: 64 MiB mmap, touch,
# munmap on CPU 0; ~1 rss_stat update per page) for: an empty
# tp_btf/rss_stat program (`floor`: the hook's dispatch, what any capture
# on it pays), one ring-buffer record per update and nothing else (`ring`:
# what any capture streaming every update through a BPF ring pays), the
# same record into per-CPU slots of an array (`pcpu`: the floor of the
# per-CPU streams rssauditd uses), rssauditd's capture, and the bpftrace one-liner
# `tracepoint:kmem:rss_stat { @ = count(); }`.
# Each is started by its owner (bench/tp_floor, rssauditd on CPU 1,
# bpftrace), then bench/attach_toggle takes its program over and attaches
# it on every other ~50 ms round of the loop: the host's speed drifts by up
# to ~30% within seconds, far more than a capture costs, so only
# neighbouring rounds compare. attach_toggle drains a program's records
# itself on CPU 1 (for rssauditd: its program and streams, not its models).
# Prints per mode the medians over ROUNDS runs of ns/page detached and
# attached and of the added ns per update, its ratio, then the BPF
# programs' own ns per run from kernel.bpf_stats_enabled with rssauditd
# itself attached, and the event rate and drops of that run.
# Usage (root): bench/capture_overhead.sh BUILD_DIR [ROUNDS [PAIRS]]
# RSSAUDITD=path measures another daemon build; COMPARE=path adds a second
# daemon build, interleaved with the first (before/after comparisons).
# BOTH=1: each pair also runs the loop on both CPUs at once (a second
# process on CPU 1; attach_toggle `both`), records drained between rounds,
# and a second line per mode gives the added cost with both CPUs faulting
# and `cross`, what running both adds per update: a line every CPU writes
# per update shows there.
set -euo pipefail
build=${1:?usage: capture_overhead.sh BUILD_DIR [ROUNDS [PAIRS]]}
rounds=${2:-5}
pairs=${3:-30}
daemon="${RSSAUDITD:-$build/daemon/rssauditd}"
modes="floor ring pcpu rssauditd${COMPARE:+ compare} bpftrace"
mountpoint -q /sys/kernel/tracing ||
  mount -t tracefs nodev /sys/kernel/tracing
# Other captures (a test's daemon, a tracer) tax every fault of the loop
# too; a daemon that just stopped frees its programs within seconds.
foreign() { bpftool prog show | grep -c 'name on_rss_stat' || true; }
for ((i = 0; i < 10 && $(foreign) > 0; i++)); do sleep 1; done
echo "foreign on_rss_stat programs attached: $(foreign)"

# The id of the program named $2 that process $1 holds (its fds' fdinfo
# name it): that process's, never another capture's running beside it.
# Waits up to 20 s for it: rssauditd measures the readers before loading.
held_prog() {
  local id try
  for ((try = 0; try < 200; try++)); do
    for id in $(grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null |
        awk '{ print $2 }' | sort -u); do
      bpftool prog show id "$id" | grep -q "name $2 " && { echo "$id"; return; }
    done
    sleep 0.1
  done
  echo "no program $2 held by pid $1" >&2; return 1
}

# Runs in its own subshell (read < <(measure)): its EXIT trap ends the
# owner whatever happens, so no tracer stays attached to the host after a
# failed or interrupted round.
measure() {  # $1: one of $modes; prints attach_toggle's line
  local prog
  pid=""  # not local: the trap runs after the function has returned
  trap 'end_owner "$pid"' EXIT
  case $1 in
    floor|ring|pcpu)
      taskset -c 1 "$build/bench/tp_floor" "$1" & pid=$!; sleep 1
      prog="tp_$1_floor"; [ "$1" = floor ] && prog="tp_floor" ;;
    rssauditd|compare)
      local bin=$daemon
      [ "$1" = compare ] && bin=$COMPARE
      taskset -c 1 "$bin" >/tmp/rssaudit-bench-daemon.log 2>&1 & pid=$!
      sleep 1; prog="on_rss_stat" ;;
    bpftrace)
      taskset -c 1 bpftrace -e 'tracepoint:kmem:rss_stat { @ = count(); }' \
        >/dev/null 2>&1 & pid=$!
      sleep 3; prog="rss_stat" ;;
  esac
  # Not the function's last simple command: bash would exec it in place of
  # the subshell, whose EXIT trap then never runs.
  local status=0
  "$build/bench/attach_toggle" "$(held_prog "$pid" "$prog")" "$pid" \
    "$pairs" ${BOTH:+both} || status=$?
  return "$status"
}

# attach_toggle stopped the owner with SIGINT; one slow to exit (bpftrace
# prints its map) gets 30 s more, then SIGKILL.
end_owner() {
  [ -n "${1:-}" ] || return 0
  kill -INT "$1" 2>/dev/null || true
  for ((i = 0; i < 300; i++)); do
    kill -0 "$1" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

declare -A detached attached added detached2 attached2 added2
for ((r = 0; r < rounds; r++)); do
  for mode in $modes; do
    plus="" plus2=""
    { read -r _ off _ on _ _ plus _
      [ -z "${BOTH:-}" ] || read -r _ _ off2 _ on2 _ _ plus2 _
    } < <(measure "$mode") || true
    if [ -z "$plus" ] || { [ -n "${BOTH:-}" ] && [ -z "$plus2" ]; }; then
      echo "capture_overhead: $mode, round $((r + 1)): no figure (attach_toggle failed, above)" >&2
      exit 1
    fi
    detached[$mode]+="$off "; attached[$mode]+="$on "; added[$mode]+="$plus "
    detached2[$mode]+="${off2:-} "; attached2[$mode]+="${on2:-} "
    added2[$mode]+="${plus2:-} "
  done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# "of bpftrace": the added cost as a share of the one-liner's in this run,
# the figure that holds from one speed of the host to the next.
bpftrace_added=$(echo "${added[bpftrace]}" | median)
for mode in $modes; do
  off=$(echo "${detached[$mode]}" | median)
  awk -v mode=$mode -v off="$off" \
      -v on="$(echo "${attached[$mode]}" | median)" \
      -v d="$(echo "${added[$mode]}" | median)" -v bt="$bpftrace_added" \
      -v all="${added[$mode]% }" 'BEGIN {
    printf "%-10s %7.1f -> %7.1f ns/page  added %6.1f ns/event  ratio %.2fx  of bpftrace %.2f  [%s]\n",
           mode, off, on, d, 1 + d / off, d / bt, all }'
done
# With both CPUs faulting: `cross` is the median over rounds of what
# running both added per update, (both - alone) in each round.
if [ -n "${BOTH:-}" ]; then
  for mode in $modes; do
    read -ra one <<<"${added[$mode]}"; read -ra two <<<"${added2[$mode]}"
    cross=""
    for i in "${!one[@]}"; do
      cross+="$(awk -v a="${one[$i]}" -v b="${two[$i]}" 'BEGIN { print b - a }') "
    done
    awk -v mode="$mode" -v off="$(echo "${detached2[$mode]}" | median)" \
        -v on="$(echo "${attached2[$mode]}" | median)" \
        -v d="$(echo "${added2[$mode]}" | median)" \
        -v x="$(echo "$cross" | median)" -v all="${cross% }" 'BEGIN {
      printf "%-10s both CPUs %7.1f -> %7.1f ns/page  added %6.1f ns/event  cross %+6.1f ns/event  [%s]\n",
             mode, off, on, d, x, all }'
  done
fi

# The BPF side alone: run time per invocation of each capture program. Only
# here: the statistics add two clock reads to every program run.
sysctl -qw kernel.bpf_stats_enabled=1
trap 'sysctl -qw kernel.bpf_stats_enabled=0' EXIT
taskset -c 1 "$daemon" >/tmp/rssaudit-bench-daemon.log 2>&1 &
pid=$!
sleep 1
ns=$("$build/bench/fault_loop" 20 0)
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
