#!/usr/bin/env bash
# rssauditd's memory with PROCESSES live mms (default 10 000), then with
# its streams overflowing: the daemon is stopped (SIGSTOP) for STOP_S
# seconds while a busy process (32 threads) keeps faulting, so records are
# lost, and continued. Prints its RSS at steady state, its peak after the
# stop, how long it took to answer again, its summary's drops= and
# losses=, and the sampling gaps it logged (the stop's, ~STOP_S s). The budget (docs/rssauditd.md, "Memory") is 256 MiB.
# Usage (root): bench/memory_budget.sh BUILD [PROCESSES] [STOP_S]
# (30 s: the 32 threads overflow the 32 MiB of streams on 2 CPUs.)
# (BUILD: a build directory with rssauditd, rssaudit and soak_workload.)
set -euo pipefail
build=${1:?usage: memory_budget.sh BUILD [PROCESSES] [STOP_S]}
processes=${2:-10000}
stop_s=${3:-30}
dir=$(mktemp -d)
daemon=$build/daemon/rssauditd cli=$build/cli/rssaudit
workload=$build/tests/soak/soak_workload
cleanup() {
  kill -KILL "${pool:-0}" "${busy:-0}" 2>/dev/null || true
  kill -CONT "${pid:-0}" 2>/dev/null || true
  kill -TERM "${pid:-0}" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$dir"
  [ -z "${cpu_cg:-}" ] || rmdir "$cpu_cg" 2>/dev/null || true
}
trap cleanup EXIT
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$pid/status"; }
hwm_kb() { awk '/^VmHWM/ {print $2}' "/proc/$pid/status"; }
live_mms() {
  "$cli" status --socket "$dir/s.sock" --json 2>/dev/null |
    sed -n 's/.*"live_mms": *\([0-9]*\).*/\1/p'
}

# The daemon in a CPU cgroup of its own where the host has the controller
# (v1 cpu, or v2 with +cpu), as systemd runs a unit: against the 32 busy
# threads it then has its unit's share, not a 33rd of the CPUs.
cpu_cg=
if [ -w /sys/fs/cgroup/cpu/cgroup.procs ]; then
  cpu_cg=/sys/fs/cgroup/cpu/rssaudit-bench-$$
elif grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
  cpu_cg=/sys/fs/cgroup/rssaudit-bench-$$
fi
[ -n "$cpu_cg" ] && mkdir "$cpu_cg"
"$daemon" --db "$dir/h.db" --socket "$dir/s.sock" 2>"$dir/d.log" &
pid=$!
if [ -n "$cpu_cg" ]; then
  echo "$pid" >"$cpu_cg/cgroup.procs"
  echo "rssauditd in CPU cgroup $cpu_cg"
else
  echo "rssauditd shares the CPUs thread by thread (no CPU controller)"
fi
for _ in $(seq 100); do [ -S "$dir/s.sock" ] && break; sleep 0.1; done
# A process each, touching a page every 5 s (the pool's children die with
# it).
"$workload" pool "$processes" 5000 "$dir/pool.status" >/dev/null 2>&1 &
pool=$!
for _ in $(seq 300); do
  [ "$(live_mms)" -ge "$processes" ] 2>/dev/null && break
  sleep 1
done
sleep 20  # every process sampled, the first flushes done
echo "live mms: $(live_mms); RSS at steady state: $(($(rss_kb) / 1024)) MiB"
"$workload" busy 32 0 "$dir/busy.status" >/dev/null 2>&1 &
busy=$!
sleep 1
kill -STOP "$pid"
sleep "$stop_s"
kill -CONT "$pid"
start=$(date +%s.%N)
until "$cli" status --socket "$dir/s.sock" >/dev/null 2>&1; do sleep 0.05; done
echo "answered $(echo "$(date +%s.%N) - $start" | bc) s after SIGCONT"
kill -KILL "$busy"; wait "$busy" 2>/dev/null || true
sleep 15
echo "RSS 15 s after: $(($(rss_kb) / 1024)) MiB; peak (VmHWM): $(($(hwm_kb) / 1024)) MiB"
kill -INT "$pid"
wait "$pid" && echo "rssauditd exit code: 0" || echo "rssauditd exit code: $?"
grep -o 'live_mms=[0-9]* \|drops=[0-9]* \|losses=[0-9]* ' "$dir/d.log" |
  tail -3 | tr -d '\n'
echo
echo "sampling gaps logged: $(sed -n 's/.*(\([0-9.]*\) s): the daemon was stopped.*/\1 s/p' \
  "$dir/d.log" | tr '\n' ' ')"

