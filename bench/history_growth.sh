#!/usr/bin/env bash
# How fast rssauditd's history grows, and whether it keeps every row, with
# PROCESSES processes that each map and touch a page every PERIOD_MS (2 s)
# and unmap it a period later: a host of processes whose RSS moves now and
# then. The daemon records only them (--comm), under its defaults
# otherwise; after WARM seconds (60: every process sampled, the first
# model-error intervals written) the data in the database is measured over
# SECONDS. Prints the growth per day, per 1 000 processes, per table, and
# the daemon's `history` line at its stop (dropped_rows, unwritten_rows)
# with its exit code.
# Usage (root): bench/history_growth.sh DAEMON PROCESSES [SECONDS] [-- ARGS]
# (DAEMON: a built rssauditd; ARGS go to it, e.g. --model-error-interval 0).
set -euo pipefail
daemon=${1:?usage: history_growth.sh DAEMON PROCESSES [SECONDS] [-- ARGS]}
processes=${2:?usage: history_growth.sh DAEMON PROCESSES [SECONDS] [-- ARGS]}
seconds=${3:-300}
shift $(($# < 3 ? $# : 3))
[ "${1:-}" = "--" ] && shift
warm=${WARM:-60}
period_ms=${PERIOD_MS:-2000}
dir=$(mktemp -d)
# The workload's children die with it (PR_SET_PDEATHSIG).
trap 'kill -KILL "${load:-0}" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT

# The workload: one process forks the others; each maps, touches and later
# unmaps one page per period, so its RSS moves by a page each time.
cat >"$dir/load.c" <<'EOF'
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <signal.h>
#include <unistd.h>
int main(int argc, char** argv) {
  int n = atoi(argv[1]), period_ms = atoi(argv[2]);
  for (int i = 1; i < n; ++i)
    if (fork() == 0) break;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  for (;;) {
    char* p = mmap(0, 4096, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    p[0] = 1;
    usleep(period_ms * 1000);
    munmap(p, 4096);
  }
}
EOF
cc -O2 -o "$dir/rsshistload" "$dir/load.c"
"$dir/rsshistload" "$processes" "$period_ms" &
load=$!
for _ in $(seq 600); do
  [ "$(pgrep -c -x rsshistload)" -ge "$processes" ] && break
  sleep 0.1
done
echo "workload: $(pgrep -c -x rsshistload) processes, a page every ${period_ms} ms"

db=$dir/history.db
: >"$dir/empty.conf"  # the defaults, whatever /etc holds
"$daemon" --config "$dir/empty.conf" --db "$db" --socket none \
  --comm rsshistload "$@" 2>"$dir/daemon.err" &
daemon_pid=$!
sleep "$warm"

# Data bytes (pages holding data) and rows per table, now.
measure() {
  sqlite3 "file:$db?mode=ro" \
    "SELECT (page_count - freelist_count) * page_size FROM pragma_page_count,
       pragma_freelist_count, pragma_page_size;
     SELECT count(*) FROM samples; SELECT count(*) FROM model_errors;
     SELECT count(DISTINCT process_id) FROM samples" | tr '\n' ' '
}
read -r bytes1 samples1 errors1 _ <<<"$(measure)"
t1=$(date +%s.%N)
sleep "$seconds"
read -r bytes2 samples2 errors2 recorded <<<"$(measure)"
t2=$(date +%s.%N)
kill -TERM "$daemon_pid"
status=0
wait "$daemon_pid" || status=$?

awk -v b1="$bytes1" -v b2="$bytes2" -v s1="$samples1" -v s2="$samples2" \
  -v e1="$errors1" -v e2="$errors2" -v t1="$t1" -v t2="$t2" \
  -v n="$recorded" 'BEGIN {
  dt = t2 - t1; per_day = (b2 - b1) / dt * 86400 / 1e6
  printf "recorded processes: %d, measured over %.0f s\n", n, dt
  printf "samples: %.1f rows/s, model_errors: %.1f rows/s\n",
         (s2 - s1) / dt, (e2 - e1) / dt
  printf "growth: %.1f MB/day, %.1f MB/day per 1000 processes\n",
         per_day, per_day * 1000 / n
}'
grep -E '^history |history rows|no sample from|rows dropped' "$dir/daemon.err" || true
echo "rssauditd exit: $status"
