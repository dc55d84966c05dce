#!/usr/bin/env bash
# The kernel test matrix (issues #19, #20): boots Debian's own cloud kernels in
# qemu (TCG) with an initramfs of busybox and the project's binaries, and
# runs build/tests/kernel_tests and an end-to-end audit (rssaudit check, then
# rssauditd over a workload) in each cell (kernel, preemption, vCPUs).
#
# Usage: tests/vm/run_matrix.sh [--kernel 6.12|6.1] [--preempt none|voluntary|full]
#          [--cpus N] [--quick] [--build DIR] [--cache DIR] [--results DIR]
#          [--timeout SECS] [--mem MIB] [--duration SECS] [--brief]
# No cell option: 6.12 x {none, voluntary, full} x {2, 4, 16, 64}. --kernel,
# --preempt and --cpus narrow an axis (repeat them, or give a comma list).
# --quick: the bounded CI part, 6.12 full/4 vCPUs, 6.12 voluntary/2 and
# 6.1 voluntary/4 (Debian 12's stock kernel as it boots).
# Exits non-zero if any cell fails. Root: installs qemu-system-x86 and
# busybox-static when missing, downloads kernels with apt-get download.
# Environment: RSSAUDIT_VM_CACHE (the cache, /var/cache/rssaudit-vm),
# RSSAUDIT_VM_APPEND (more kernel parameters, e.g. loglevel=5),
# RSSAUDIT_VM_TCG_THREAD (multi, the default, or single: a first attempt
# without the emulator's cross-vCPU races; a rerun is always single).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$here/../../build
cache=${RSSAUDIT_VM_CACHE:-/var/cache/rssaudit-vm}
results=
kernels=() preempts=() cpus=()
quick=0 timeout_s='' mem='' duration=20 brief=0

usage() { sed -n '7,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
die() { echo "run_matrix: $*" >&2; exit 2; }
split() { tr ',' ' ' <<<"$1"; }

while (($#)); do
  case $1 in
    --kernel) read -ra v <<<"$(split "${2:?}")"; kernels+=("${v[@]}"); shift ;;
    --preempt) read -ra v <<<"$(split "${2:?}")"; preempts+=("${v[@]}"); shift ;;
    --cpus) read -ra v <<<"$(split "${2:?}")"; cpus+=("${v[@]}"); shift ;;
    --quick) quick=1 ;;
    --build) build=${2:?}; shift ;;
    --cache) cache=${2:?}; shift ;;
    --results) results=${2:?}; shift ;;
    --timeout) timeout_s=${2:?}; shift ;;
    --mem) mem=${2:?}; shift ;;
    --duration) duration=${2:?}; shift ;;
    --brief) brief=1 ;;
    -h | --help) usage 0 ;;
    *) usage ;;
  esac
  shift
done

for k in "${kernels[@]}"; do [[ $k == 6.12 || $k == 6.1 ]] || die "--kernel: 6.12 or 6.1, not $k"; done
for p in "${preempts[@]}"; do [[ $p =~ ^(none|voluntary|full)$ ]] || die "--preempt: none, voluntary or full, not $p"; done
for c in "${cpus[@]}"; do [[ $c =~ ^[1-9][0-9]*$ ]] || die "--cpus: a number, not $c"; done
[[ $duration =~ ^[1-9][0-9]*$ && $duration -ge 10 ]] || die "--duration: 10 s or more"

cells=()  # "kernel preempt cpus"
if ((quick)); then
  ((${#kernels[@]} + ${#preempts[@]} + ${#cpus[@]} == 0)) ||
    die "--quick is a fixed set of cells: no --kernel, --preempt or --cpus with it"
  cells=("6.12 full 4" "6.12 voluntary 2" "6.1 voluntary 4")
else
  ((${#kernels[@]})) || kernels=(6.12)
  ((${#preempts[@]})) || preempts=(none voluntary full)
  ((${#cpus[@]})) || cpus=(2 4 16 64)
  for k in "${kernels[@]}"; do
    for p in "${preempts[@]}"; do
      for c in "${cpus[@]}"; do cells+=("$k $p $c"); done
    done
  done
fi

build=$(realpath "$build") || die "no build directory"
payload=(tests/kernel_tests cli/rssaudit daemon/rssauditd bench/inject_rate
  bench/fault_loop bench/busy_threads)
for f in "${payload[@]}" packaging/rssauditd.service; do
  [[ -f $build/$f ]] || die "missing $build/$f: build the project first"
done
[[ -n $results ]] || results=$cache/results/$(date +%Y%m%d-%H%M%S)
mkdir -p "$cache" "$results"
results=$(realpath "$results")

# --- Tools -----------------------------------------------------------------
missing=()
command -v qemu-system-x86_64 >/dev/null || missing+=(qemu-system-x86)
dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' ||
  missing+=(busybox-static)
if ((${#missing[@]})); then
  ((EUID == 0)) || die "needs ${missing[*]} (apt-get install -y ${missing[*]}, as root)"
  echo "run_matrix: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
    { apt-get update -qq &&
      apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
fi
for t in gzip ldd dpkg-deb apt-get timeout tar realpath; do
  command -v "$t" >/dev/null || die "needs $t"
done

# --- Kernels ---------------------------------------------------------------
updated=0
newest_package() {  # SERIES -> the newest cloud image package apt knows
  local re
  case $1 in
    6.12) re='^linux-image-6\.12\.[0-9]+\+deb12-cloud-amd64-unsigned$' ;;
    6.1) re='^linux-image-6\.1\.0-[0-9]+-cloud-amd64-unsigned$' ;;
  esac
  apt-cache search --names-only "$re" 2>/dev/null | awk '{print $1}' | sort -V | tail -n1
}

declare -A vmlinuz_of
kernel_for() {  # SERIES: sets vmlinuz_of[SERIES]
  local series=$1 pkg dir deb
  [[ -n ${vmlinuz_of[$series]:-} ]] && return 0
  pkg=$(newest_package "$series")
  if [[ -z $pkg ]] && ((!updated && EUID == 0)); then
    apt-get update -qq || true
    updated=1
    pkg=$(newest_package "$series")
  fi
  if [[ -z $pkg ]]; then  # offline: the newest one unpacked before
    dir=$(find "$cache/kernels" -maxdepth 1 -name "linux-image-${series}[.-]*" 2>/dev/null |
      sort -V | tail -n1)
    [[ -n $dir ]] || die "apt knows no cloud kernel package for $series"
    pkg=$(basename "$dir")
  fi
  dir=$cache/kernels/$pkg
  if [[ ! -f $dir/.unpacked ]]; then
    mkdir -p "$cache/deb"
    # apt drops to _apt to download where that user may write.
    id _apt >/dev/null 2>&1 && chown _apt "$cache/deb"
    deb=$(find "$cache/deb" -name "${pkg}_*.deb" | sort -V | tail -n1)
    if [[ -z $deb ]]; then
      echo "run_matrix: apt-get download $pkg"
      (cd "$cache/deb" && apt-get download -q "$pkg" >/dev/null)
      deb=$(find "$cache/deb" -name "${pkg}_*.deb" | sort -V | tail -n1)
    fi
    [[ -n $deb ]] || die "apt-get download $pkg gave no .deb"
    rm -rf "$dir" && mkdir -p "$dir"
    dpkg-deb -x "$deb" "$dir"
    touch "$dir/.unpacked"
  fi
  vmlinuz_of[$series]=$(find "$dir/boot" -name 'vmlinuz-*' | head -n1)
  [[ -n ${vmlinuz_of[$series]} ]] || die "no boot/vmlinuz-* in $pkg"
  echo "run_matrix: kernel $series = $pkg"
}

# --- Root ------------------------------------------------------------------
# Payload binaries at the paths they have here (the tests have them compiled
# in), with their shared libraries and the dynamic loader. Copied now, as
# the build may be redone under us: a copy that differs from its source was
# caught mid-rewrite and is taken again.
stage=$(mktemp -d "$cache/root.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage"/usr/{bin,sbin,lib/x86_64-linux-gnu,lib64} \
  "$stage"/{dev,proc,sys,tmp,run,root,etc,mnt,var/tmp}
for d in bin sbin lib lib64; do ln -s "usr/$d" "$stage/$d"; done

copy_file() {  # HOST_PATH [ROOT_PATH]: (by default) the same path in the root, symlinks resolved
  local dst=$stage${2:-$1}
  mkdir -p "$(dirname "$dst")"
  for _ in 1 2 3 4 5; do
    cp -L "$1" "$dst" && cmp -s "$1" "$dst" && return 0
    sleep 2
  done
  die "could not copy a stable $1"
}
libs_of() {  # ELF -> the libraries and loader ldd resolves
  ldd "$1" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3}
    $1 ~ /^\// {print $1}'
}

declare -A lib_seen
copy_libs() {  # ELF...: the libraries they need not copied yet
  local f lib
  for f; do
    while read -r lib; do
      [[ -n ${lib_seen[$lib]:-} ]] && continue
      lib_seen[$lib]=1
      copy_file "$lib"
    done < <(libs_of "$f")
  done
}

copy_file "$build/packaging/rssauditd.service"
for f in "${payload[@]}"; do
  copy_file "$build/$f"
  copy_libs "$build/$f"
done
# Diagnostics, where the host has them: bpftool and the linked BPF object
# give the guest the whole verifier log of a program that fails to load.
if [[ -x /usr/sbin/bpftool && -f $build/bpf/rssaudit.linked.bpf.o ]]; then
  copy_file /usr/sbin/bpftool
  copy_file "$build/bpf/rssaudit.linked.bpf.o"
  copy_libs /usr/sbin/bpftool
fi

# Tools the kernel tests run through popen (/bin/sh -c): dash as /bin/sh,
# since busybox sh runs its own applets before PATH (its setpriv lacks
# --bounding-set); util-linux's setpriv; the distribution's python3 (not a
# pyenv shim) with its standard library, less tests, tools, caches and the
# extension modules nothing here imports.
if [[ -x /bin/dash ]]; then
  copy_file /bin/dash /usr/bin/dash
  copy_libs /bin/dash
  ln -s dash "$stage/usr/bin/sh"
else
  echo "run_matrix: no /bin/dash: /bin/sh is busybox sh (its setpriv applet first)" >&2
fi
if [[ -x /usr/bin/setpriv ]]; then
  copy_file /usr/bin/setpriv
  copy_libs /usr/bin/setpriv
else
  echo "run_matrix: no /usr/bin/setpriv (util-linux): Service tests fail" >&2
fi
python=$(realpath -e /usr/bin/python3 2>/dev/null || true)
pylib=/usr/lib/${python##*/}
if [[ -x $python && -f $pylib/os.py ]]; then
  copy_file "$python" /usr/bin/python3
  copy_libs "$python"
  tar -C / -ch --exclude=test --exclude=__pycache__ --exclude=site-packages \
    --exclude=dist-packages --exclude=idlelib --exclude=tkinter --exclude=lib2to3 \
    --exclude=ensurepip --exclude=pydoc_data --exclude='config-*' \
    --exclude='_test*.so' --exclude='_ctypes_test*.so' --exclude='*xx*.so' \
    --exclude='_curses*.so' --exclude='readline*.so' --exclude='_dbm*.so' \
    --exclude='nis*.so' --exclude='ossaudiodev*.so' "${pylib#/}" |
    tar -C "$stage" -x
  copy_libs "$stage$pylib"/lib-dynload/*.so
else
  echo "run_matrix: no /usr/bin/python3 with its library: Daemon tests fail" >&2
fi
# Debug info is most of the size: gone, the initramfs unpacks in seconds.
if command -v objcopy >/dev/null; then
  for f in "${payload[@]}"; do objcopy --strip-debug "$stage$build/$f"; done
fi

# busybox with its applet links, for every utility not copied above (/init
# runs under busybox sh, which runs its applets before any PATH lookup). No
# setpriv link: util-linux's, or none.
busybox=$(command -v busybox)
cp "$busybox" "$stage/usr/bin/busybox"
while read -r applet; do
  [[ ${applet##*/} == setpriv || -e $stage/$applet || -L $stage/$applet ]] && continue
  ln -s /usr/bin/busybox "$stage/$applet"
done < <("$busybox" --list-full)

printf 'root:x:0:0:root:/root:/bin/sh\n' >"$stage/etc/passwd"
printf 'root:x:0:\n' >"$stage/etc/group"
gtest_args=--gtest_color=no
((brief)) && gtest_args+=" --gtest_brief=1"
cat >"$stage/etc/rssaudit-vm.env" <<EOF
BUILD='$build'
DURATION=$duration
GTEST_ARGS='$gtest_args'
EOF
install -m 755 "$here/guest-init.sh" "$stage/init"
initrd=$results/root.cpio.gz
(cd "$stage" && find . -print0 | "$busybox" cpio -o -H newc -0 -R 0:0 2>/dev/null) |
  gzip -1 >"$initrd"
echo "run_matrix: root $initrd ($(du -h "$initrd" | cut -f1))"

# --- Cells -----------------------------------------------------------------
section() {  # LOG NAME: the lines between "=== NAME begin" and its end
  awk -v n="$2" '$0 ~ "^=== " n " end" {on = 0} on {print} $0 ~ "^=== " n " begin" {on = 1}' "$1"
}
pick() {  # FILE REGEX: the first match, or nothing
  grep -m1 -oE "$2" "$1" 2>/dev/null | head -n1 || true
}
count() {  # FILE WORD: N of gtest's "[  WORD  ] N tests" summary line
  pick "$1" "^\[ *$2 *\] [0-9]+ tests?" | grep -oE '[0-9]+' || true
}
value() {  # FILE KEY: VALUE of the first " KEY=VALUE" on a summary line
  grep -m1 -E '^summary .*fidelity=' "$1" | grep -oE "(^| )$2=[^ ]+" |
    head -n1 | cut -d= -f2 || true
}

for cell in "${cells[@]}"; do kernel_for "${cell%% *}"; done
failed=0
lines=()
header=$(printf '%-28s %-9s %5s %-4s %-11s %-14s %-10s %-6s %-8s %6s %s' \
  kernel preempt vcpus boot loaded 'gtest p/f/s' fidelity drops flagged wall verdict)
echo "$header"
for cell in "${cells[@]}"; do
  read -r series preempt n <<<"$cell"
  name=$series-$preempt-$n
  log=$results/$name.log
  m=${mem:-$((n <= 8 ? 2048 : 2048 + 32 * n))}
  t=${timeout_s:-$((1200 + 8 * n))}
  start=$(date +%s)
  # qemu's TCG lets other vCPUs run kernel text that text_poke_bp() is
  # rewriting: a static key flipped under load (sched_clock_cpu at boot,
  # seen at 4 and 64 vCPUs) Oopses the guest on the int3 it plants, and
  # attaching fentry to a function every fault runs (6.1's
  # add_mm_counter_fast) locked a CPU up in a fault at 16 vCPUs
  # (softlockup_panic turns that into a panic, not a 20-minute timeout),
  # and 6.1 called address 0 from a function whose fentry site was being
  # patched (the kernel tests' attach and detach), twice in one CI run.
  # (oops=panic: the guest ends there; it hung until the timeout, 20
  # minutes, after such an oops on 2026-12-07.)
  # That is the emulator, not the code under test: such a cell runs once
  # more, with one TCG thread for all vCPUs (no vCPU runs code another is
  # rewriting; 6.1 at 4 vCPUs: 135 s, 129-132 s on a thread each), and its
  # verdict says so. The first run keeps a thread each: true parallelism is
  # what the kernel tests' races need.
  retried=
  tcg_thread=${RSSAUDIT_VM_TCG_THREAD:-multi}
  [[ $tcg_thread =~ ^(multi|single)$ ]] || die "RSSAUDIT_VM_TCG_THREAD: multi or single, not $tcg_thread"
  for attempt in 1 2; do
    rc=0
    # Debian's cloud kernels default to transparent_hugepage=always (this
    # host: madvise); the kernel tests count 4 KiB faults of large buffers,
    # so the guests run as the host does until the tests opt out themselves.
    timeout -k 10 "$t" qemu-system-x86_64 -accel "tcg,thread=$tcg_thread" -cpu max \
      -smp "$n" -m "$m" -nographic -no-reboot -nic none \
      -kernel "${vmlinuz_of[$series]}" -initrd "$initrd" \
      -append "console=ttyS0 panic=-1 oops=panic softlockup_panic=1 quiet preempt=$preempt transparent_hugepage=madvise rssaudit.kt_timeout=$((t * 2 / 3))${RSSAUDIT_VM_APPEND:+ $RSSAUDIT_VM_APPEND}" \
      </dev/null >"$log.raw" 2>&1 || rc=$?
    tr -d '\r' <"$log.raw" >"$log" && rm -f "$log.raw"
    why=
    grep -q 'Oops: int3' "$log" && why=int3
    grep -q 'BUG: soft lockup' "$log" && why=lockup
    [[ -z $why ]] && grep -qE '^\[ *[0-9.]+\] (Oops: |kernel BUG at )' "$log" && why=oops
    # A guest that reset before its init said a word (-no-reboot makes
    # that qemu's exit 0): once, 3 s into a CI run, 6.12 at 2 vCPUs went
    # from the firmware's "Booting from ROM" straight to its end, with no
    # kernel line (quiet) and the same kernel and root booting in the
    # cells beside it.
    [[ -z $why && $rc == 0 ]] && ! grep -q 'RSSAUDIT-VM: boot ok' "$log" && why=reset
    ((attempt == 1)) && [[ -n $why ]] || break
    mv "$log" "$log.$why"
    retried=" (rerun on one TCG thread after a TCG $why: $name.log.$why)"
    tcg_thread=single
  done
  wall=$(($(date +%s) - start))
  kt=$results/$name.kernel_tests.txt audit=$results/$name.audit.txt
  section "$log" kernel_tests >"$kt"
  section "$log" audit >"$audit"

  kernel=$(pick "$log" 'RSSAUDIT-VM: boot ok kernel=[^ ]+' | cut -d= -f2)
  boot=no
  [[ -n $kernel ]] && boot=ok
  # The mode in force, as debugfs shows it: "none voluntary (full)".
  actual=$(pick "$log" 'preempt=\[[^]]*\]' | grep -oE '\([a-z]+\)' | tr -d '()' || true)
  shown=$preempt
  [[ -z $actual || $actual == "$preempt" ]] || shown="$preempt($actual!)"
  loaded=$(pick "$log" '^=== audit end .*loaded=[a-z]+' | sed 's/.*loaded=//')
  kt_rc=$(pick "$log" '^=== kernel_tests end rc=[0-9]+' | sed 's/.*rc=//')
  # A failed test's own line, "[  FAILED  ] Suite.Name (N ms)": --gtest_brief
  # prints no "N tests, listed below" summary.
  p=$(count "$kt" PASSED) s=$(count "$kt" SKIPPED)
  # Tests of the other counting scheme skip, each saying so on a line, and
  # tests that need what a guest does not carry (a loop device).
  known_skips=$(grep -cE '^\[ (scheme|host)-skip \]' "$kt" 2>/dev/null || true)
  f=$(grep -cE '^\[  FAILED  \] [^ ]+ \([0-9]+ ms\)$' "$kt" 2>/dev/null || true)
  if [[ -n $(pick "$kt" '^\[=+\] [0-9]+ tests? from') ]]; then
    gtest=${p:-0}/${f:-0}/${s:-0}
  else  # crashed or timed out: no closing lines
    gtest="none(${kt_rc:--})"
  fi
  fidelity=$(value "$audit" fidelity) drops=$(value "$audit" drops)
  updates=$(value "$audit" updates) exact=$(value "$audit" exact)
  flagged=  # every update not exact: ambiguous, no baseline, ...
  [[ -n $updates && $updates != 0 && -n $exact ]] &&
    flagged=$(awk -v e="$exact" -v u="$updates" 'BEGIN {printf "%.3f%%", 100 * (u - e) / u}')
  end_rc=$(pick "$log" 'RSSAUDIT-VM-END rc=[0-9]+' | cut -d= -f2)
  verdict=ok
  if ((rc == 124 || rc == 137)); then verdict="FAIL(timeout ${t}s)"
  elif [[ $boot != ok ]]; then verdict="FAIL(no boot, qemu rc=$rc)"
  elif [[ -z $end_rc ]]; then verdict="FAIL(no end marker, qemu rc=$rc)"
  elif [[ $end_rc != 0 ]]; then verdict="FAIL(guest rc=$end_rc)"
  elif [[ $fidelity != 100.0000% ]]; then
    verdict="FAIL(unflagged updates not all exact: $fidelity)"
  elif [[ $loaded == yes && ${s:-0} != "${known_skips:-0}" ]]; then
    # Where rssauditd loads, a kernel test that skips hides a capture that
    # broke (a load failure the tests take for a missing capability);
    # only a test of the other counting scheme, or one needing what the
    # guest lacks, may skip.
    verdict="FAIL($((s - known_skips)) kernel tests skipped where rssauditd loaded)"
  fi
  [[ $verdict == ok ]] || failed=1
  verdict+=$retried  # after the check: a passing rerun passes
  line=$(printf '%-28s %-9s %5s %-4s %-11s %-14s %-10s %-6s %-8s %5ss %s' \
    "${kernel:-$series?}" "$shown" "$n" "$boot" "${loaded:--}" "$gtest" \
    "${fidelity:--}" "${drops:--}" "${flagged:--}" "$wall" "$verdict")
  echo "$line"
  lines+=("$line")
done

{
  echo "$header"
  printf '%s\n' "${lines[@]}"
} >"$results/summary.txt"
echo "run_matrix: logs and summary.txt in $results"
exit "$failed"
