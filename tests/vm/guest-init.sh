#!/bin/busybox sh
# shellcheck shell=dash  # busybox sh (ash)
# /init of the guests run_matrix.sh boots (busybox sh, PID 1; /bin/sh, what
# the tests' popen runs, is dash where the host had it): mounts the
# kernel's file systems, runs the payload (kernel_tests, rssaudit check, an
# rssauditd audit of a workload) and powers off. Everything goes to the
# console between "=== NAME begin" / "=== NAME end rc=N" markers, which
# run_matrix.sh parses; the last line is "RSSAUDIT-VM-END rc=N".
# shellcheck disable=SC1091  # the settings file exists in the guest only
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TMPDIR=/tmp
. /etc/rssaudit-vm.env

say() { echo "RSSAUDIT-VM: $*"; }

mnt() {  # TYPE DIR [OPTIONS]
  mkdir -p "$2"
  if mount -t "$1" ${3:+-o "$3"} "$1" "$2"; then
    say "mount $1 $2 ok"
  else
    say "mount $1 $2 FAILED"
  fi
}

mnt proc /proc
mnt sysfs /sys
mnt devtmpfs /dev
mnt devpts /dev/pts
mnt tmpfs /dev/shm
mnt bpf /sys/fs/bpf
mnt debugfs /sys/kernel/debug
mnt tracefs /sys/kernel/tracing
mnt cgroup2 /sys/fs/cgroup
# /tmp stays the initramfs's own (already in memory): a tmpfs over it would
# hide a build directory under /tmp, e.g. a clone in /tmp.
chmod 1777 /tmp
mnt tmpfs /run mode=755
KT_TIMEOUT=600
read -r cmdline </proc/cmdline
for word in $cmdline; do
  case $word in
    rssaudit.kt_timeout=*) KT_TIMEOUT=${word#*=} ;;
    rssaudit.gtest_filter=*) GTEST_ARGS="$GTEST_ARGS --gtest_filter=${word#*=}" ;;
  esac
done
ip link set lo up 2>/dev/null || say "no loopback"
# The guest has no network device: loopback is all there is.

preempt=$(cat /sys/kernel/debug/sched/preempt 2>/dev/null)
say "boot ok kernel=$(uname -r) cpus=$(nproc) preempt=[${preempt:-?}]" \
  "mem_kib=$(awk '/MemTotal/ {print $2}' /proc/meminfo)" \
  "uptime=$(cut -d' ' -f1 /proc/uptime)"
say "cmdline $cmdline"
say "btf $(ls -l /sys/kernel/btf/vmlinux 2>&1)"
# What the tests' commands find, through /bin/sh -c as popen runs them.
# shellcheck disable=SC2016  # expanded by that sh
say "tools sh=$(readlink /bin/sh)" \
  "$(/bin/sh -c 'python3 -c "b = bytearray(8 << 20); print(\"python3=ok\")" 2>&1 | tail -n1')" \
  "$(/bin/sh -c 'setpriv --bounding-set -all --inh-caps -all --no-new-privs true && echo setpriv=ok' 2>&1 | tail -n1)"

# qemu's TCG does not stop other vCPUs from running kernel text that
# text_poke_bp() is rewriting: enabling a tracepoint of a hot path under load
# (exc_page_fault's, rss_stat's static key and static call) Oopsed guests on
# the int3 it plants, three times. Two tracing instances, tracing off, hold
# a probe on each tracepoint the capture attaches to, so that attaching and
# detaching it (each kernel test does) rewrites no text: the keys stay on
# and the static calls stay on the iterator.
for inst in hold1 hold2; do
  d=/sys/kernel/tracing/instances/$inst
  mkdir -p "$d" && echo 0 >"$d/tracing_on"
  for ev in kmem/rss_stat task/task_newtask sched/sched_process_exec \
    sched/sched_process_exit mmap/exit_mmap exceptions/page_fault_user \
    exceptions/page_fault_kernel; do
    echo 1 >"$d/events/$ev/enable" 2>/dev/null || say "hold $ev FAILED"
  done
done

cd /tmp || exit 1
status=0

# (a) The kernel tests, bounded.
echo "=== kernel_tests begin"
# shellcheck disable=SC2086  # GTEST_ARGS is a word list
timeout "$KT_TIMEOUT" "$BUILD/tests/kernel_tests" $GTEST_ARGS 2>&1
kt=$?
echo "=== kernel_tests end rc=$kt"
[ "$kt" = 0 ] || status=1

# (b) An end-to-end audit: what the host offers, then rssauditd capturing
# while a workload faults pages on up to 4 CPUs.
echo "=== check begin"
timeout 120 "$BUILD/cli/rssaudit" check 2>&1
echo "=== check end rc=$?"

echo "=== audit begin"
timeout $((DURATION + 120)) "$BUILD/daemon/rssauditd" --duration "$DURATION" \
  --db /tmp/a.db --socket none >/tmp/d.out 2>/tmp/d.err &
daemon=$!
loaded=no
i=0
while [ $i -lt 1200 ]; do  # up to 120 s to load under TCG
  if grep -q capturing /tmp/d.err; then loaded=yes; break; fi
  kill -0 "$daemon" 2>/dev/null || break
  sleep 0.1
  i=$((i + 1))
done
say "rssauditd loaded=$loaded after $((i / 10)).$((i % 10)) s"
if [ "$loaded" = yes ]; then
  workers=$(nproc)
  [ "$workers" -gt 4 ] && workers=4
  end=$(($(date +%s) + DURATION - 5))
  cpu=0
  workload=
  while [ $cpu -lt "$workers" ]; do
    (
      while [ "$(date +%s)" -lt "$end" ]; do
        "$BUILD/bench/fault_loop" 1 "$cpu" >/dev/null || exit 1
        dd if=/dev/zero of=/dev/null bs=4M count=4 2>/dev/null
      done
    ) &
    workload="$workload $!"
    cpu=$((cpu + 1))
  done
  # shellcheck disable=SC2086  # a list of pids
  wait $workload
fi
wait "$daemon"
drc=$?
# A kernel rssaudit does not audit (before 6.2): the daemon says so.
[ "$loaded" != yes ] && grep -q "BPF capture unavailable" /tmp/d.err &&
  loaded=unsupported
cat /tmp/d.out /tmp/d.err
echo "=== audit end rc=$drc loaded=$loaded"
{ [ "$drc" = 0 ] && [ "$loaded" = yes ]; } || status=1

# When the daemon could not load, the whole verifier log (rssauditd keeps
# only 511 bytes of each libbpf message): bpftool loads the linked object.
if [ "$loaded" = no ] && [ -x /usr/sbin/bpftool ] &&
  [ -f "$BUILD/bpf/rssaudit.linked.bpf.o" ]; then
  echo "=== bpftool begin"
  mkdir -p /sys/fs/bpf/rssaudit-probe
  timeout 300 bpftool prog loadall "$BUILD/bpf/rssaudit.linked.bpf.o" \
    /sys/fs/bpf/rssaudit-probe 2>&1
  echo "=== bpftool end rc=$?"
  rm -rf /sys/fs/bpf/rssaudit-probe
fi

echo "=== dmesg begin"
dmesg
echo "=== dmesg end rc=0"

sync
echo "RSSAUDIT-VM-END rc=$status"
poweroff -f
