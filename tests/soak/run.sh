#!/usr/bin/env bash
# The churn and soak test of rssauditd (issue 39; tests/soak/README.md):
# the daemon under the service's MemoryMax on a host with a busy process
# older than it, thousands of processes, a fork storm, a mass exit, a
# SIGSTOP of 20 s, a clean stop and a restart; status and /metrics timed
# throughout. Prints one table of figures and checks; exits 1 if a check
# failed, 2 when the host cannot run it.
#
#   tests/soak/run.sh [--short] [--no-restart]      (root; BUILD=dir, default build/)
set -uo pipefail
export LC_ALL=C  # $EPOCHREALTIME and printf with a decimal point

usage() {
  cat <<'EOF'
usage: tests/soak/run.sh [--short] [--no-restart]
  --short        the CI form: a pool of 1000, 20 s phases (~2.5 min; full ~5 min)
  --no-restart   skip the restart on the same database
Environment: BUILD (build directory, default build/), SOAK_POOL (processes),
SOAK_STORM_RATE (forks/s), SOAK_RSS_BUDGET_MIB (256), SOAK_KEEP=1 (keep the
work directory on success).
EOF
}

short=0
restart=1
for arg in "$@"; do
  case $arg in
    --short) short=1 ;;
    --no-restart) restart=0 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "run.sh: unknown argument '$arg'" >&2; usage >&2; exit 2 ;;
  esac
done

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
DAEMON=$BUILD/daemon/rssauditd
CLI=$BUILD/cli/rssaudit
WORKLOAD=$BUILD/tests/soak/soak_workload
PROBER=$BUILD/tests/soak/soak_prober
UNIT=$ROOT/packaging/rssauditd.service.in

# The plan. Full: ~5 min on 2 CPUs; short: ~2.5 min (measured, shared host).
if ((short)); then
  pool=${SOAK_POOL:-1000}; pool_hold_s=20; storm_s=20; watch_s=15
else
  pool=${SOAK_POOL:-3000}; pool_hold_s=60; storm_s=60; watch_s=30
fi
pool_period_ms=3000
storm_rate=${SOAK_STORM_RATE:-300}
busy_threads=32
busy_pause_us=1000
stop_s=20
flush_interval_s=2
rss_budget_mib=${SOAK_RSS_BUDGET_MIB:-256}
latency_limit_s=1
drift_known_limit_s=10
gone_limit_s=10
stop_limit_s=90  # systemd's default TimeoutStopSec=
probe_period_ms=300
probe_period_s=$(awk -v ms="$probe_period_ms" 'BEGIN { print ms / 1000 }')

t_begin=$EPOCHREALTIME
say() { printf '[%6.1fs] %s\n' "$(elapsed "$t_begin")" "$*"; }
die() { echo "run.sh: $*" >&2; exit 2; }
# Seconds from $1 (an $EPOCHREALTIME) to now, or to $2.
elapsed() { awk -v a="$1" -v b="${2:-$EPOCHREALTIME}" 'BEGIN { printf "%.1f", b - a }'; }

# Polls `$@` every 0.2 s until it succeeds or $1 seconds pass; sets
# waited_s to the time it took. 1 on timeout.
wait_until() {
  local limit=$1 t0=$EPOCHREALTIME
  shift
  while :; do
    if "$@"; then waited_s=$(elapsed "$t0"); return 0; fi
    if awk -v a="$t0" -v b="$EPOCHREALTIME" -v l="$limit" 'BEGIN { exit !(b - a > l) }'; then
      waited_s=$(elapsed "$t0")
      return 1
    fi
    sleep 0.2
  done
}

# ---------------------------------------------------------------- preflight
for setting in "SOAK_POOL=$pool" "SOAK_STORM_RATE=$storm_rate" "SOAK_RSS_BUDGET_MIB=$rss_budget_mib"; do
  [[ ${setting#*=} =~ ^[1-9][0-9]{0,6}$ ]] || die "${setting%%=*}='${setting#*=}' is not a whole number from 1 to 9999999"
done
[[ $(id -u) == 0 ]] || die "needs root (BPF, cgroups, thousands of processes)"
for f in "$DAEMON" "$CLI" "$WORKLOAD" "$PROBER"; do
  [[ -x $f ]] || die "$f is missing: build first (cmake --build ${BUILD} --target rssauditd rssaudit soak_workload soak_prober), or set BUILD=dir"
done
command -v sqlite3 >/dev/null || die "needs sqlite3 (the history's figures)"
[[ -r $UNIT ]] || die "$UNIT is missing"

# MemoryMax= of the unit, in bytes (systemd's suffixes are powers of 1024).
memory_max_text=$(sed -n 's/^MemoryMax=//p' "$UNIT" | tail -1)
case $memory_max_text in
  *[0-9]K) memory_max=$((${memory_max_text%K} << 10)) ;;
  *[0-9]M) memory_max=$((${memory_max_text%M} << 20)) ;;
  *[0-9]G) memory_max=$((${memory_max_text%G} << 30)) ;;
  *[0-9]T) memory_max=$((${memory_max_text%T} << 40)) ;;
  *[0-9]) memory_max=$memory_max_text ;;
  *) die "$UNIT: MemoryMax='$memory_max_text' is not a size this script reads (N, NK, NM, NG, NT)" ;;
esac

# Room for the pool: its processes, the storm's, the busy threads and what
# the host runs already, under pid_max, threads-max and RLIMIT_NPROC.
pid_max=$(cat /proc/sys/kernel/pid_max)
threads_max=$(cat /proc/sys/kernel/threads-max)
nproc_limit=$(ulimit -u)
host_tasks=$(awk '{ split($4, a, "/"); print a[2] }' /proc/loadavg)
margin=2000
needed=$((host_tasks + pool + busy_threads + margin))
for limit in "pid_max=$pid_max" "threads-max=$threads_max" "ulimit -u=$nproc_limit"; do
  value=${limit##*=}
  [[ $value == unlimited ]] && continue
  ((needed <= value)) || die "the host cannot hold a pool of $pool: $host_tasks tasks run already, the pool, $busy_threads busy threads and a margin of $margin need $needed, over ${limit%=*} ($value). Set SOAK_POOL lower."
done
mem_available_kib=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
# A pool process took ~150 KiB of MemAvailable here (page tables, stack,
# written pages); 512 KiB each leaves room for other kernels' layouts.
mem_needed_kib=$((pool * 512 + (memory_max >> 10) + (1 << 20)))
((mem_available_kib >= mem_needed_kib)) ||
  die "MemAvailable ${mem_available_kib} KiB is under the ${mem_needed_kib} KiB a pool of $pool, the daemon's MemoryMax and 1 GiB of margin need. Set SOAK_POOL lower."
nr_cpus=$(nproc)

# Cgroups, as systemd on Debian 12 places a service and a login shell:
# the daemon's (memory limited by the unit's MemoryMax), the workload's
# (no limit: it lets every process the test starts be killed at the end,
# its descendants too) and the probers' (an admin's shell). Each has a CPU
# cgroup of its own where the host has the controller: systemd < 258
# turns CPU accounting on for every unit by default (DefaultCPUAccounting=
# on kernels >= 4.15), so a service shares the CPUs with other units by
# weight, not with each of their threads. cgroup v1's hierarchies where
# mounted, else v2.
cg_name=rssaudit-soak-$$
if [[ -w /sys/fs/cgroup/memory/cgroup.procs ]]; then
  cg_kind=v1
  cg_root=/sys/fs/cgroup/memory
  cpu_root=
  [[ -w /sys/fs/cgroup/cpu/cgroup.procs ]] && cpu_root=/sys/fs/cgroup/cpu
elif grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
  cg_kind=v2
  cg_root=/sys/fs/cgroup
  grep -qw memory "$cg_root/cgroup.subtree_control" ||
    echo +memory >"$cg_root/cgroup.subtree_control" ||
    die "cannot enable the memory controller in $cg_root/cgroup.subtree_control"
  cpu_root=
  if grep -qw cpu "$cg_root/cgroup.controllers" &&
    { grep -qw cpu "$cg_root/cgroup.subtree_control" ||
      echo +cpu >"$cg_root/cgroup.subtree_control"; } 2>/dev/null; then
    cpu_root=$cg_root
  fi
else
  die "no memory cgroup: neither /sys/fs/cgroup/memory (v1) nor a cgroup v2 root with the memory controller"
fi
# The directories of each role: the memory cgroup (the probers share the
# workload's), and the CPU cgroup where it is another directory.
cg_daemon=$cg_root/$cg_name-daemon
cg_work=$cg_root/$cg_name-work
declare -A cg_dirs=([daemon]=$cg_daemon [work]=$cg_work [probe]=$cg_work)
if [[ -n $cpu_root && $cpu_root != "$cg_root" ]]; then
  for role in daemon work probe; do cg_dirs[$role]+=" $cpu_root/$cg_name-$role"; done
elif [[ -n $cpu_root ]]; then
  cg_dirs[probe]=$cg_root/$cg_name-probe
fi
cpu_split=$([[ -n $cpu_root ]] && echo "a CPU cgroup each (equal weights)" ||
  echo "no CPU controller: every thread competes with every other")

W=$(mktemp -d /tmp/rssaudit-soak.XXXXXX) || die "cannot create a work directory"
db=$W/soak.db
sock=$W/control.sock
: >"$W/empty.conf"

# Every process the test starts lives in one of the two cgroups; the exit
# trap kills both, then removes them.
# (cgroup files read as empty to `test -s`: their content is read.)
kill_cgroup() {
  local cg=$1 tries=0 pids
  [[ -d $cg ]] || return 0
  [[ -w $cg/cgroup.kill ]] && echo 1 >"$cg/cgroup.kill" 2>/dev/null
  while pids=$(cat "$cg/cgroup.procs" 2>/dev/null) && [[ -n $pids ]] && ((tries++ < 100)); do
    for pid in $pids; do kill -KILL "$pid" 2>/dev/null; done
    sleep 0.1
  done
  rmdir "$cg" 2>/dev/null || { sleep 1; rmdir "$cg" 2>/dev/null; } ||
    echo "run.sh: could not remove $cg (processes left: $(wc -l <"$cg/cgroup.procs"))" >&2
}
cleanup() {
  trap - EXIT INT TERM
  touch "$W/stop" 2>/dev/null
  disown -a  # no "Killed" line per job: the cgroups say when all are gone
  local cg
  for cg in $(printf '%s\n' ${cg_dirs[work]} ${cg_dirs[probe]} ${cg_dirs[daemon]} | awk '!seen[$0]++'); do
    kill_cgroup "$cg"
  done
  if [[ ${keep_work:-1} == 0 ]]; then rm -rf "$W"; fi
}
trap cleanup EXIT
trap 'echo; say "interrupted: killing everything the test started"; exit 130' INT TERM

for cg in $(printf '%s\n' ${cg_dirs[daemon]} ${cg_dirs[work]} ${cg_dirs[probe]} | sort -u); do
  mkdir "$cg" || die "cannot create cgroup $cg"
done
if [[ $cg_kind == v1 ]]; then
  echo "$memory_max" >"$cg_daemon/memory.limit_in_bytes" || die "cannot set $cg_daemon/memory.limit_in_bytes"
else
  echo "$memory_max" >"$cg_daemon/memory.max" || die "cannot set $cg_daemon/memory.max"
fi

# Moves process $2 into the cgroups of role $1 (daemon, work, probe).
join_role() {
  local cg
  for cg in ${cg_dirs[$1]}; do echo "$2" >"$cg/cgroup.procs" || return 1; done
}
# Runs program `$@` in the background in the cgroups of role $1 from its
# first instruction ($! is the program's pid); spawn_fn_in runs a function.
spawn_in() {
  local role=$1
  shift
  (join_role "$role" "$BASHPID" && exec "$@") &
}
spawn_fn_in() {
  local role=$1
  shift
  (join_role "$role" "$BASHPID" && "$@") &
}
# Sleeps $1 s in a way SIGTERM interrupts at once (bash runs a trap only
# after a foreground command ends); the sleep is the cgroup's to kill.
pause() {
  spawn_in work sleep "$1"
  wait "$!"
}

# A free TCP port on 127.0.0.1 for the metrics endpoint.
port_listening() {
  local hex
  printf -v hex '%04X' "$1"
  awk -v p=":$hex" 'FNR > 1 && $4 == "0A" && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }' \
    /proc/net/tcp /proc/net/tcp6 2>/dev/null
}
port=0
for _ in $(seq 50); do
  candidate=$((20000 + RANDOM % 40000))
  port_listening "$candidate" || { port=$candidate; break; }
done
((port)) || die "found no free TCP port for the metrics endpoint"

say "rssaudit soak test ($( ((short)) && echo short || echo full)): $nr_cpus CPUs, $host_tasks tasks running, pid_max $pid_max, threads-max $threads_max, ulimit -u $nproc_limit"
say "plan: busy process ($busy_threads threads) before the daemon; pool of $pool processes (a page every ${pool_period_ms} ms) held ${pool_hold_s} s; fork storm ${storm_rate}/s for ${storm_s} s; mass exit; SIGSTOP ${stop_s} s; watch ${watch_s} s; SIGTERM$( ((restart)) && echo '; restart')"
say "daemon cgroup $cg_daemon (cgroup $cg_kind, limit MemoryMax=$memory_max_text from $(basename "$UNIT")); daemon, workload and probers: $cpu_split; work directory $W"

# ------------------------------------------------------------ the daemon's API
status_json() { timeout 10 "$CLI" status --json --socket "$sock" 2>/dev/null; }
# The number of key $1 in the JSON on stdin (the CLI prints one key a line).
json_value() { sed -n "s/^ *\"$1\": \\([^,]*\\),\\{0,1\\}\$/\\1/p" | head -1; }
daemon_answers() { timeout 5 "$CLI" status --socket "$sock" >/dev/null 2>&1; }
# How many processes named $1 the daemon audits now; fails when it does
# not answer.
live_count_of() {
  local view
  view=$(timeout 10 "$CLI" top --live --json --comm "$1" -n 1000000 --socket "$sock" 2>/dev/null) ||
    return 1
  grep -c "\"comm\": \"$1\"" <<<"$view" || true
}
# Reads key=value $2 of the last log line of file $3 that starts with $1.
log_value() {
  grep "^$1 " "$3" 2>/dev/null | tail -1 | tr ' ' '\n' | sed -n "s/^$2=//p"
}
# Key $2 of a workload's status file $1 (`word key=value ...`).
status_field() { tr ' ' '\n' <"$1" 2>/dev/null | sed -n "s/^$2=//p"; }

# Whether the daemon of $daemon_pid is gone (a zombie counts: not reaped yet).
daemon_dead() {
  ! kill -0 "$daemon_pid" 2>/dev/null ||
    [[ $(awk '{ print $3 }' "/proc/$daemon_pid/stat" 2>/dev/null) == Z ]]
}
# Says once that the daemon died, when it has.
died_noted=
note_if_died() {
  [[ -z $died_noted ]] && daemon_dead || return 1
  died_noted=1
  say "rssauditd has died (its log: $W/daemon.log); the phases go on without it"
}
answers_or_dead() { daemon_answers || daemon_dead; }
# Starts rssauditd in its cgroup, logging to $1, with the flags after it;
# started_after is the seconds to its first answer, empty if it gave none.
start_daemon() {
  local log=$1 t0=$EPOCHREALTIME
  shift
  spawn_in daemon "$DAEMON" --config "$W/empty.conf" --db "$db" --socket "$sock" \
    --flush-interval "$flush_interval_s" "$@" 2>"$log"
  daemon_pid=$!
  started_after=
  if wait_until 60 answers_or_dead && ! daemon_dead; then started_after=$(elapsed "$t0"); fi
}
# SIGTERM, then up to stop_limit_s for the exit (else SIGKILL): sets
# daemon_rc, and stop_took (empty when it was killed).
stop_daemon() {
  local t0=$EPOCHREALTIME
  kill -TERM "$daemon_pid" 2>/dev/null
  if wait_until "$stop_limit_s" daemon_dead; then
    wait "$daemon_pid" 2>/dev/null
    daemon_rc=$?
    stop_took=$(elapsed "$t0")
  else
    kill -KILL "$daemon_pid"
    wait "$daemon_pid" 2>/dev/null
    daemon_rc="none within ${stop_limit_s} s (killed)"
    stop_took=
  fi
}

# ------------------------------------------------------------------- phase 1
say "phase 1: the busy process, before the daemon: $busy_threads threads mapping, touching and unmapping anon, file and shmem pages"
spawn_in work "$WORKLOAD" busy "$busy_threads" "$busy_pause_us" "$W/busy.status"
busy_pid=$!
wait_until 20 test -s "$W/busy.status" || die "the busy process did not start (see $W)"
sleep 1  # its faults under way before the daemon looks

say "phase 2: rssauditd in its cgroup, --db $db --socket $sock --metrics-listen 127.0.0.1:$port --flush-interval $flush_interval_s"
start_daemon "$W/daemon.log" --metrics-listen "127.0.0.1:$port"
if [[ -z $started_after ]]; then
  say "rssauditd did not start (no answer within 60 s, or it exited); its log:"
  tail -20 "$W/daemon.log"
  exit 1
fi
t_ready=$EPOCHREALTIME
say "rssauditd (pid $daemon_pid) answers after $started_after s"

# ------------------------------------------------- monitor and probers
# The daemon's VmRSS and VmHWM (KiB) and its cgroup's usage every 0.5 s.
monitor() {
  local usage_file=$cg_daemon/memory.usage_in_bytes rss hwm
  [[ $cg_kind == v2 ]] && usage_file=$cg_daemon/memory.current
  while [[ ! -e $W/stop && ! -e $W/monitor.stop ]]; do
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$daemon_pid/status" 2>/dev/null)
    hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$daemon_pid/status" 2>/dev/null)
    echo "$EPOCHREALTIME ${rss:--} ${hwm:--} $(cat "$usage_file" 2>/dev/null || echo -)"
    sleep 0.5
  done
}
# One line per probe: start, end, exit code.
probe_loop() {
  local out=$1 t0
  shift
  while [[ ! -e $W/stop && ! -e $W/probes.stop ]]; do
    t0=$EPOCHREALTIME
    "$@" >/dev/null 2>>"$out.err"
    echo "$t0 $EPOCHREALTIME $?" >>"$out"
    sleep "$probe_period_s"
  done
}
spawn_fn_in work monitor >"$W/memory.txt"
# The checked figures: a long-lived client asking for health (what `rssaudit
# status` asks) and scraping /metrics, each timed (prober.cc).
spawn_in probe "$PROBER" "$sock" "$port" "$probe_period_ms" "$W/status.txt" "$W/scrape.txt" "$W/probes.stop"
# And as an admin sees it: the command, its own start included, beside a
# bare process start (what any command costs on this host under the load).
spawn_fn_in probe probe_loop "$W/cli.txt" timeout 10 "$CLI" status --socket "$sock"
spawn_fn_in probe probe_loop "$W/start.txt" timeout 10 true
say "probing every ${probe_period_s} s, each timed: health and GET /metrics (soak_prober), the rssaudit status command and a bare process start; the daemon's memory every 0.5 s"

# ------------------------------------------------ the busy process's drift
busy_drift=
busy_drift_known() {
  local d
  d=$(timeout 5 "$CLI" show --live "$busy_pid" --json --socket "$sock" 2>/dev/null | json_value drift_pages)
  [[ -n $d && $d != null ]] && busy_drift=$d
}
left=$(awk -v a="$t_ready" -v b="$EPOCHREALTIME" -v l="$drift_known_limit_s" 'BEGIN { printf "%.1f", l - (b - a) }')
say "phase 3: is the busy process's drift known within ${drift_known_limit_s} s of the daemon answering? (${left} s left)"
busy_known_after=
if wait_until "$left" busy_drift_known; then
  busy_known_after=$(elapsed "$t_ready")
  busy_figure="after $busy_known_after s (drift $busy_drift pages)"
else
  busy_figure="unknown after $(elapsed "$t_ready") s"
fi
say "busy process (pid $busy_pid): drift $busy_figure"

# ---------------------------------------------------------------- the pool
say "phase 4: a pool of $pool processes, each touching a page every ${pool_period_ms} ms"
t_pool=$EPOCHREALTIME
spawn_in work "$WORKLOAD" pool "$pool" "$pool_period_ms" "$W/pool.status"
pool_pid=$!
wait_until $((60 + pool / 20)) test -s "$W/pool.status"
pool_status=$(cat "$W/pool.status" 2>/dev/null)
case $pool_status in
  ready*) say "$pool processes forked in $(elapsed "$t_pool") s" ;;
  *) say "the pool did not start: '${pool_status:-no status}'"; exit 1 ;;
esac
pool_seen() { local n; n=$(live_count_of soak-pool) && ((n >= pool)) || daemon_dead; }
wait_until 60 pool_seen
note_if_died ||
  say "the daemon audits $(live_count_of soak-pool || echo '?') of them after $(elapsed "$t_pool") s; holding ${pool_hold_s} s"
t_hold=$EPOCHREALTIME
pause "$pool_hold_s"

# --------------------------------------------------------------- the storm
stormers=$nr_cpus
t_storm=$EPOCHREALTIME
say "phase 5: fork storm, ${storm_rate} short-lived processes a second for ${storm_s} s ($stormers forking processes), the pool alive"
for i in $(seq "$stormers"); do
  spawn_in work "$WORKLOAD" storm $((storm_rate / stormers)) "$storm_s" "$W/storm$i.status"
done
storm_done() { for i in $(seq "$stormers"); do [[ -s $W/storm$i.status ]] || return 1; done; }
wait_until $((storm_s + 120)) storm_done || say "the storm did not end within $((storm_s + 120)) s"
storm_forked=0 storm_reaped=0
for i in $(seq "$stormers"); do
  f=$(status_field "$W/storm$i.status" forked) r=$(status_field "$W/storm$i.status" reaped)
  storm_forked=$((storm_forked + ${f:-0})) storm_reaped=$((storm_reaped + ${r:-0}))
done
storm_rate_reached=$(awk -v n="$storm_forked" -v s="$storm_s" 'BEGIN { printf "%.0f", n / s }')
say "storm: $storm_forked forked, $storm_reaped reaped (${storm_rate_reached}/s reached)"
note_if_died

# ----------------------------------------------------------- the mass exit
say "phase 6: mass exit: the pool's $pool processes killed at once"
t_mass_exit=$EPOCHREALTIME
kill -USR1 "$pool_pid"
wait_until 120 grep -q '^exited' "$W/pool.status" || say "the pool did not report its exits within 120 s"
pool_created=$(status_field "$W/pool.status" created)
pool_reaped=$(status_field "$W/pool.status" reaped)
say "pool: ${pool_reaped:-?} of ${pool_created:-?} reaped after $(elapsed "$t_mass_exit") s"
pool_left='?'
pool_gone() { pool_left=$(live_count_of soak-pool) && [[ $pool_left == 0 ]] || daemon_dead; }
pool_gone_after=
if wait_until 30 pool_gone && ! daemon_dead; then
  pool_gone_after=$(elapsed "$t_mass_exit")
  pool_gone_figure="none left after $pool_gone_after s"
else
  pool_gone_figure="$pool_left left after $(elapsed "$t_mass_exit") s"
fi
say "the daemon's live view of the pool: $pool_gone_figure"
# The history should hold every exit within a few flushes.
q() { sqlite3 -batch -noheader -cmd '.timeout 5000' "$db" "$1" 2>/dev/null; }
# The pids (sorted, each as often as the workload used it) of the
# processes it created as `$1` (files $3...) that the history holds an exit
# of, under that name or its parent's, $2: a process seen between its fork
# and its rename keeps the parent's name in the history. With `-23`
# instead of `-12` as $4: those it lacks.
workload_exits() {
  local child=$1 parent=$2 which=$3
  shift 3
  comm "$which" <(cat "$@" 2>/dev/null | sort) \
    <(q "select pid from processes where run_id = (select min(id) from runs) and exit_ns is not null
         and comm in ('$child', '$parent')" | sort)
}
pool_exits() { workload_exits soak-pool soak-pooler "$@" "$W/pool.status.pids"; }
storm_exits() { workload_exits soak-storm soak-stormer "$@" "$W"/storm*.status.pids; }
exits_written() {
  [[ $(pool_exits -12 | wc -l) == "${pool_reaped:-x}" && $(storm_exits -12 | wc -l) == "$storm_reaped" ]] || daemon_dead
}
if wait_until $((4 * flush_interval_s + 20)) exits_written && ! daemon_dead; then
  say "the history holds every exit the workload saw $(elapsed "$t_mass_exit") s after the mass exit"
else
  say "the history holds $(pool_exits -12 | wc -l) of ${pool_reaped:-?} pool and $(storm_exits -12 | wc -l) of $storm_reaped storm exits $(elapsed "$t_mass_exit") s after the mass exit"
fi
note_if_died

# ---------------------------------------- the host's processes against /proc
# "pid start_ticks rss_pages" of every process with an mm now (statm's size
# > 0: neither a kernel thread nor a zombie), from /proc.
proc_processes() {
  local d size line
  for d in /proc/[0-9]*; do
    read -r size _ 2>/dev/null <"$d/statm" && ((size > 0)) || continue
    read -r line 2>/dev/null <"$d/stat" || continue
    # Fields from 3 on, after the comm's last ')': 22 (start) is the 20th.
    set -- ${line##*) }
    echo "${d#/proc/} ${20} ${22}"
  done
}
# "pid start_ticks rss_pages" of each object of the array named $1 in the
# CLI's JSON on stdin (one key a line, in any order).
json_processes() {
  awk -v want="\"$1\": [" '
    index($0, want) == 3 { inside = $0 !~ /\[\],?$/; next }
    inside && /^  \]/ { inside = 0 }
    !inside { next }
    /"pid":/ { pid = $2 + 0 }
    /"start_ticks":/ { st = $2 + 0 }
    /"(kernel_rss_pages|rss_pages)":/ { v = $2; sub(/,$/, "", v) }
    /^    }/ { print pid, st, v; pid = st = v = "" }'
}
# Compares view $1 with /proc read before it ($2) and after it ($3), the
# first begun at $4 clock ticks after boot: "dead missing shown view_pages
# proc_pages". Dead: shown although gone from /proc before the view was
# asked (started before then). Missing: alive at both reads, started 3 s
# before the first, not shown. The daemon, which does not audit itself,
# is left out of the reads.
compare_with_proc() {
  awk -v first="$4" -v young=$((3 * ticks_per_s)) '
    FILENAME == ARGV[1] { before[$1 " " $2] = $3; pid_of[$1]; next }
    FILENAME == ARGV[2] { after[$1 " " $2]; next }
    {
      shown[$1]
      if ($2 >= first) next  # started after the first read began
      if (($1 " " $2) in before || ($2 == 0 && $1 in pid_of)) {
        n++; view += ($3 == "null" ? 0 : $3); proc += before[$1 " " $2]
      } else dead++
    }
    END {
      for (k in before) {
        split(k, f, " ")
        if ((k in after) && f[2] + young <= first && !(f[1] in shown)) missing++
      }
      printf "%d %d %d %d %d\n", dead, missing, n, view, proc
    }' "$2" "$3" "$1"
}
ticks_per_s=$(getconf CLK_TCK)
page_kib=$(($(getconf PAGESIZE) / 1024))
say "the live view and the history against /proc: processes shown as running that are gone, and running ones not shown"
first_ticks=$(awk -v hz="$ticks_per_s" '{ printf "%d", $1 * hz }' /proc/uptime)
proc_processes | grep -v "^$daemon_pid " >"$W/proc-before.txt"
timeout 10 "$CLI" top --live --json -n 1000000 --socket "$sock" >"$W/view-live.json" 2>/dev/null
timeout 30 "$CLI" top --db "$db" --json -n 1000000 >"$W/view-history.json" 2>/dev/null
json_processes processes <"$W/view-live.json" >"$W/view-live.txt"
json_processes processes <"$W/view-history.json" >"$W/view-history.txt"
proc_processes | grep -v "^$daemon_pid " >"$W/proc-after.txt"
read -r live_dead live_missing live_n live_pages proc_pages \
  <<<"$(compare_with_proc "$W/view-live.txt" "$W/proc-before.txt" "$W/proc-after.txt" "$first_ticks")"
read -r history_dead _ history_n _ _ \
  <<<"$(compare_with_proc "$W/view-history.txt" "$W/proc-before.txt" "$W/proc-after.txt" "$first_ticks")"
proc_n=$(wc -l <"$W/proc-before.txt")
drops_before_stop=$(status_json | json_value drops)
# The history's counts before the stop, from a summary asked for now: the
# daemon may not live to log its last one.
history_lines() { grep -c '^history ' "$W/daemon.log"; }
history_logged() { (($(history_lines) > history_before_stop)); }
history_before_stop=$(history_lines)
if kill -USR1 "$daemon_pid" 2>/dev/null && wait_until 10 history_logged; then
  unwritten_before_stop=$(log_value history unwritten_rows "$W/daemon.log")
  dropped_before_stop=$(log_value history dropped_rows "$W/daemon.log")
  # The longest the loop kept a request waiting, from its start to now.
  loop_delay_before_stop=$(log_value summary loop_delay_max_s "$W/daemon.log")
  history_before_stop=$(history_lines)
fi

# --------------------------------------------------------------- SIGSTOP
say "phase 7: kill -STOP rssauditd for ${stop_s} s (the busy process goes on), then kill -CONT"
rss_before_stop=$(awk '/^VmRSS:/ { print $2 }' "/proc/$daemon_pid/status" 2>/dev/null)
t_stop=$EPOCHREALTIME
if kill -STOP "$daemon_pid" 2>/dev/null; then
  pause "$stop_s"
  kill -CONT "$daemon_pid"
else
  say "rssauditd is not running: no stop"
fi
t_cont=$EPOCHREALTIME
if wait_until 60 answers_or_dead && ! daemon_dead; then
  say "answers again $waited_s s after SIGCONT; watching ${watch_s} s"
else
  note_if_died || say "no answer within 60 s of SIGCONT"
  say "watching ${watch_s} s"
fi
pause "$watch_s"
note_if_died

# ------------------------------------------------------------ clean stop
busy_drift=
busy_drift_known
busy_drift_at_end=${busy_drift:-unknown}
drops_at_end=$(status_json | json_value drops)
touch "$W/probes.stop"
hwm_at_end=$(awk '/^VmHWM:/ { print $2 }' "/proc/$daemon_pid/status" 2>/dev/null)
rss_at_end=$(awk '/^VmRSS:/ { print $2 }' "/proc/$daemon_pid/status" 2>/dev/null)
stop_took=
if daemon_dead; then
  wait "$daemon_pid" 2>/dev/null
  daemon_rc=$?
  say "phase 8: no SIGTERM: rssauditd had died already, exit code $daemon_rc"
else
  say "phase 8: SIGTERM to rssauditd (a clean stop: the last flush, the summary)"
  stop_daemon
  say "rssauditd exit code: $daemon_rc${stop_took:+ after $stop_took s}"
fi
touch "$W/monitor.stop"
kill -TERM "$busy_pid" 2>/dev/null
# The cgroup's figures of this daemon, before a restart adds to them.
if [[ $cg_kind == v1 ]]; then
  cg_peak=$(cat "$cg_daemon/memory.max_usage_in_bytes" 2>/dev/null)
  oom_kills=$(awk '$1 == "oom_kill" { print $2 }' "$cg_daemon/memory.oom_control" 2>/dev/null)
else
  cg_peak=$(cat "$cg_daemon/memory.peak" 2>/dev/null)
  oom_kills=$(awk '$1 == "oom_kill" { print $2 }' "$cg_daemon/memory.events" 2>/dev/null)
fi

# ------------------------------------------------------------- restart
if ((restart)); then
  say "phase 9: restart on the same database"
  first_rc=$daemon_rc first_stop_took=$stop_took
  start_daemon "$W/daemon-restart.log"
  restart_ready=$started_after
  [[ -n $restart_ready ]] && sleep 3
  stop_daemon
  restart_rc=$daemon_rc
  daemon_rc=$first_rc stop_took=$first_stop_took
  say "restarted: answered after ${restart_ready:-never} s, exited with $restart_rc"
fi

# ------------------------------------------------------------- figures
say "reading the figures (the daemon's log, the database)"
log=$W/daemon.log
run_id=$(q 'select min(id) from runs')
run_id=${run_id:-0}
rss_bound=
IFS='|' read -r run_cpus run_batch run_counting <<<"$(q "select nr_cpus, batch, counting from runs where id = $run_id")"
[[ ${run_counting:-} == percpu_counter ]] && rss_bound=$((3 * run_cpus * (run_batch - 1)))
# samples has no index on process_id (schema/002): CROSS JOIN keeps SQLite
# from scanning it once per process (minutes on a full run's database).
beyond_bound=$(q "select count(*) from samples s cross join processes p cross join runs r
  where p.id = s.process_id and r.id = p.run_id and r.counting = 'percpu_counter'
  and s.drift is not null and abs(s.drift) > 3 * r.nr_cpus * (r.batch - 1)")
IFS='|' read -r samples_total samples_known max_drift <<<"$(q "select count(*), count(s.drift), max(abs(s.drift))
  from samples s cross join processes p where p.id = s.process_id and p.run_id = $run_id")"
# Every pool process should be in every sampling tick while all were
# alive (from the hold to the mass exit, a second in from each end): per
# process, its samples in that window; rows dropped would show as fewer.
ns() { awk -v t="$1" -v d="$2" 'BEGIN { printf "%.0f", (t + d) * 1e9 }'; }
IFS='|' read -r pool_sampled pool_ticks_min pool_ticks_max <<<"$(q "with c as (select process_id, count(*) n
  from samples where time_ns between $(ns "$t_hold" 1) and $(ns "$t_mass_exit" -1) group by process_id)
  select count(*), min(coalesce(c.n, 0)), max(coalesce(c.n, 0)) from processes p left join c on c.process_id = p.id
  where p.run_id = $run_id and p.comm in ('soak-pool', 'soak-pooler') and p.pid != $pool_pid")"
hold_window_s=$(awk -v a="$t_hold" -v b="$t_mass_exit" 'BEGIN { printf "%.0f", b - a - 2 }')
pool_exits -23 >"$W/missing-pool-exits.txt"
storm_exits -23 >"$W/missing-storm-exits.txt"
pool_exits_db=$(pool_exits -12 | wc -l)
storm_exits_db=$(storm_exits -12 | wc -l)
# Of those, recorded under the parent's name.
parent_named() { comm -12 <(cat "${@:2}" 2>/dev/null | sort) <(q "select pid from processes where run_id = $run_id and comm = '$1'" | sort) | wc -l; }
pool_parent_named=$(parent_named soak-pooler "$W/pool.status.pids")
storm_parent_named=$(parent_named soak-stormer "$W"/storm*.status.pids)
busy_samples_known=$(q "select count(s.drift) from samples s cross join processes p
  where p.id = s.process_id and p.run_id = $run_id and p.pid = $busy_pid")
loss_drops=$(q "select coalesce(sum(capture_drops), 0) from losses where run_id = $run_id")
runs_in_db=$(q 'select count(*) from runs')
db_bytes=$(du -cb "$db" "$db-wal" "$db-shm" 2>/dev/null | tail -1 | cut -f1)

# The summary logged at exit, if the daemon lived to log one (the lines
# before the stop are the one asked for then).
drops='' losses='' unwritten='' dropped='' history_exits=''
if history_logged; then
  drops=$(log_value summary drops "$log")
  losses=$(log_value summary losses "$log")
  unwritten=$(log_value history unwritten_rows "$log")
  dropped=$(log_value history dropped_rows "$log")
  history_exits=$(log_value history exits "$log")
fi

# The daemon's memory: the largest VmHWM seen and when its RSS was highest.
peak_hwm_kib=$(awk '$3 != "-" && $3 > m { m = $3 } END { print m + 0 }' "$W/memory.txt")
((${hwm_at_end:-0} > peak_hwm_kib)) && peak_hwm_kib=$hwm_at_end
peak_at=$(awk -v t0="$t_ready" '$2 != "-" && $2 > m { m = $2; t = $1 } END { printf "%.0f", t - t0 }' "$W/memory.txt")
died_at=$(awk -v t0="$t_ready" '$2 == "-" && seen { printf "%.0f", $1 - t0; exit } $2 != "-" { seen = 1 }' "$W/memory.txt")
since() { awk -v a="$t_ready" -v b="$1" 'BEGIN { printf "%.0f", b - a }'; }

# p50, p99, max, slow (over the limit), failed, counted, and excluded: the
# probes overlapping the stop (a stopped process answers no one).
latency() {
  local excluded
  excluded=$(awk -v s="$t_stop" -v c="$t_cont" '$2 > s && $1 < c { n++ } END { print n + 0 }' "$1" 2>/dev/null)
  awk -v s="$t_stop" -v c="$t_cont" '!($2 > s && $1 < c) { printf "%.6f %d\n", $2 - $1, $3 }' "$1" 2>/dev/null |
    sort -g | awk -v l="$latency_limit_s" -v x="${excluded:-0}" '
      { v[NR] = $1; if ($1 > l) slow++; if ($2 != 0) failed++ }
      END {
        n = NR
        if (n == 0) { print "- - - 0 0 0", x; exit }
        p50 = v[int(0.5 * n + 0.999999)]; p99 = v[int(0.99 * n + 0.999999)]
        printf "%.3f %.3f %.3f %d %d %d %d\n", p50, p99, v[n], slow + 0, failed + 0, n, x }'
}
read -r st_p50 st_p99 st_max st_slow st_failed st_n st_excl <<<"$(latency "$W/status.txt")"
read -r sc_p50 sc_p99 sc_max sc_slow sc_failed sc_n sc_excl <<<"$(latency "$W/scrape.txt")"
read -r cl_p50 cl_p99 cl_max _ cl_failed cl_n _ <<<"$(latency "$W/cli.txt")"
read -r ps_p50 ps_p99 ps_max _ _ ps_n _ <<<"$(latency "$W/start.txt")"
# The phases the slow or failed probes of file $1 started in: `storm 3, ...`.
where_slow() {
  awk -v s="$t_stop" -v c="$t_cont" -v l="$latency_limit_s" \
    -v phases="start $t_ready pool $t_pool storm $t_storm exit $t_mass_exit after-cont $t_cont" '
    BEGIN { n = split(phases, p, " ") }
    !($2 > s && $1 < c) && ($2 - $1 > l || $3 != 0) {
      name = p[1]; for (i = 1; i < n; i += 2) if ($1 >= p[i + 1]) name = p[i]
      if (!(name in count)) order[++k] = name
      count[name]++ }
    END { for (i = 1; i <= k; i++) printf "%s%s %d", (i > 1 ? ", " : ""), order[i], count[order[i]] }' "$1" 2>/dev/null
}
# `; missing: pid pid ...` (the first five) when pids in file $1.
missing_figure() {
  [[ -s $1 ]] || return 0
  printf '; missing pids: %s' "$(head -5 "$1" | tr '\n' ' ')"
  (($(wc -l <"$1") > 5)) && printf '... (%s)' "$1"
}

# ------------------------------------------------------------- the table
failures=0
rows=()
sep=$'\x1f'
# check NAME FIGURE LIMIT HELD: HELD is 1 when the check held.
check() {
  local verdict=PASS
  if [[ ${4:-0} != 1 ]]; then verdict=FAIL; failures=$((failures + 1)); fi
  rows+=("$1$sep$2$sep$3$sep$verdict")
}
info() { rows+=("$1$sep$2$sep$sep"); }
held() { "$@" && echo 1; }
is_int() { [[ $1 =~ ^-?[0-9]+$ ]]; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f MiB", k / 1024 }'; }

check "daemon peak RSS (VmHWM)" "$(mib "$peak_hwm_kib"), RSS highest at +${peak_at} s" "<= $rss_budget_mib MiB" \
  $((peak_hwm_kib > 0 && peak_hwm_kib <= rss_budget_mib * 1024))
check "daemon cgroup: OOM kills" "${oom_kills:-?} (cgroup peak $(mib $((${cg_peak:-0} / 1024))): RSS, page cache, BPF maps)" \
  "0 (MemoryMax=$memory_max_text)" "$(held test "${oom_kills:-}" == 0)"
if [[ -n $rss_at_end ]]; then
  rss_end_figure=$(mib "$rss_at_end")
else
  rss_end_figure="gone${died_at:+ (died at +$died_at s)}"
fi
info "daemon RSS before the stop / at the end" "$(mib "${rss_before_stop:-0}") / $rss_end_figure"
info "daemon loop: longest wait (before the stop)" "${loop_delay_before_stop:-?} s (summary loop_delay_max_s=)"
info "status latency p50 / p99 / max" "$st_p50 / $st_p99 / $st_max s ($st_n probes)"
check "status probes over ${latency_limit_s} s or failed" "$st_slow slow, $st_failed failed ($st_excl during the stop, not counted)$( ((st_slow + st_failed)) && echo "; in: $(where_slow "$W/status.txt")")" "0" \
  $((st_n > 0 && st_slow + st_failed == 0))
info "scrape latency p50 / p99 / max" "$sc_p50 / $sc_p99 / $sc_max s ($sc_n probes)"
check "scrapes over ${latency_limit_s} s or failed" "$sc_slow slow, $sc_failed failed ($sc_excl during the stop, not counted)$( ((sc_slow + sc_failed)) && echo "; in: $(where_slow "$W/scrape.txt")")" "0" \
  $((sc_n > 0 && sc_slow + sc_failed == 0))
check "rssaudit status (the command) failed" "${cl_failed:-?} of ${cl_n:-?}; p50 / p99 / max $cl_p50 / $cl_p99 / $cl_max s, its start included" "0" \
  $((cl_n > 0 && cl_failed == 0))
info "a bare process start, beside it" "p50 / p99 / max $ps_p50 / $ps_p99 / $ps_max s ($ps_n runs of 'timeout 10 true')"
check "busy older process: drift known (live)" "$busy_figure; at the end: $busy_drift_at_end" \
  "<= ${drift_known_limit_s} s after ready" "$(held test -n "$busy_known_after")"
info "busy older process: stored samples with drift" "${busy_samples_known:-?}"
check "pool gone from the live view (mass exit)" "$pool_gone_figure" "<= ${gone_limit_s} s" \
  "$(held awk -v a="${pool_gone_after:-x}" -v l="$gone_limit_s" 'BEGIN { exit !(a != "x" && a <= l) }')"
check "live view against /proc (after the mass exit)" "${live_dead:-?} gone shown, ${live_missing:-?} running not shown; ${live_n:-?} shown of $proc_n in /proc: kernel RSS $(mib $((${live_pages:-0} * page_kib))) shown, $(mib $((${proc_pages:-0} * page_kib))) in stat" \
  "0 and 0" $((live_n > 0 && live_dead == 0 && live_missing == 0))
check "history (top --db) against /proc" "${history_dead:-?} gone shown as running; ${history_n:-?} running" "0" \
  $((history_n > 0 && history_dead == 0))
check "pool exits recorded / seen" "$pool_exits_db / ${pool_reaped:-?} (created ${pool_created:-?}; $pool_parent_named under the parent's name)$(missing_figure "$W/missing-pool-exits.txt")" "equal" \
  "$(is_int "${pool_exits_db:-}" && [[ $pool_exits_db == "${pool_reaped:-x}" ]] && echo 1)"
check "storm exits recorded / seen" "$storm_exits_db / $storm_reaped (forked $storm_forked, ${storm_rate_reached}/s; $storm_parent_named under the parent's name)$(missing_figure "$W/missing-storm-exits.txt")" "equal" \
  "$(is_int "${storm_exits_db:-}" && [[ $storm_exits_db == "$storm_reaped" ]] && echo 1)"
check "pool processes in every tick while alive" "samples per process ${pool_ticks_min:-?} to ${pool_ticks_max:-?} over ${hold_window_s} s, ${pool_sampled:-?} processes" "min = max (+-1)" \
  "$(is_int "${pool_ticks_min:-}" && ((pool_ticks_min > 0 && pool_ticks_max - pool_ticks_min <= 1 && pool_sampled >= pool)) && echo 1)"
check "history rows lost (unwritten + dropped)" "${unwritten:-?} + ${dropped:-?} (before the stop: ${dropped_before_stop:-?} dropped, ${unwritten_before_stop:-?} waiting for a flush)" "0" \
  "$(is_int "${unwritten:-}" && is_int "${dropped:-}" && ((unwritten + dropped == 0)) && echo 1)"
check "stored drift beyond the kernel's bound" "${beyond_bound:-?} samples (RSS bound ${rss_bound:-none} pages; largest ${max_drift:-?}; $samples_known of $samples_total samples with drift)" "0" \
  "$(held test "${beyond_bound:-}" == 0)"
check "daemon exit code on SIGTERM" "$daemon_rc${stop_took:+ after $stop_took s}" "0 within ${stop_limit_s} s" "$(held test "$daemon_rc" == 0)"
if ((restart)); then
  check "restart on the same database" "answered after ${restart_ready:-never} s, exit $restart_rc; runs in db ${runs_in_db:-?}" "answers, exit 0" \
    "$([[ -n $restart_ready && $restart_rc == 0 ]] && echo 1)"
fi
info "capture drops (summary drops=)" "${drops:-?} (live: ${drops_before_stop:-?} before the stop, ${drops_at_end:-?} at the end; losses rows ${loss_drops:-?})"
info "reconstruction losses (summary losses=)" "${losses:-not reported}"
info "history exits (summary exits=)" "${history_exits:-?}"
info "database size" "$(mib $((${db_bytes:-0} / 1024)))"
info "workload" "busy $busy_threads threads; pool $pool; storm $storm_forked forks"
info "phases (s after ready)" "pool +$(since "$t_pool"), mass exit +$(since "$t_mass_exit"), stop +$(since "$t_stop"), cont +$(since "$t_cont")"
info "wall time" "$(elapsed "$t_begin") s"

echo
format='%-7s %-46s %-22s %s\n'
printf "$format" verdict check limit figure
printf "$format" ------- ----- ----- ------
for row in "${rows[@]}"; do
  IFS=$sep read -r name figure limit verdict <<<"$row"
  printf "$format" "$verdict" "$name" "$limit" "$figure"
done
echo
if ((failures)); then
  say "FAIL: $failures check(s) failed; logs, probes and database in $W"
  exit 1
fi
keep_work=${SOAK_KEEP:-0}
say "PASS: every check held${SOAK_KEEP:+; logs, probes and database in $W}"
exit 0
