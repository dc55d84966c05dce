#!/bin/sh
# Runs the fuzz targets of fuzz/CMakeLists.txt (fuzz/README.md), each for
# SECONDS from a scratch copy of its seed corpus (fuzz/corpus/TARGET: the
# committed corpus never grows). Prints each target's executions and final
# corpus size; exits 1 if any target found something, naming the
# reproducer and the command that replays it.
#
#   fuzz/run.sh BUILD_DIR SECONDS [TARGET...]    (default: every target)
#
# Reproducers stay in BUILD_DIR/fuzz-findings/TARGET/ (libFuzzer's crash-*,
# leak-*, timeout-*, oom-*); the scratch corpora are deleted.
set -eu

usage() {
  echo "usage: $0 BUILD_DIR SECONDS [TARGET...]" >&2
  exit 2
}
[ $# -ge 2 ] || usage
build=$(cd "$1" && pwd)
seconds=$2
shift 2
case $seconds in '' | *[!0-9]*) usage ;; esac
here=$(cd "$(dirname "$0")" && pwd)

# Each target's longest input: what the real input can be, not more, so
# that libFuzzer does not spend its time on sizes the code never sees.
max_len() {
  case $1 in
    proc_stat_fuzz | proc_statm_fuzz | proc_cgroup_fuzz) echo 4096 ;;
    proc_status_fuzz | proc_smaps_rollup_fuzz | pagemap_fuzz) echo 4096 ;;
    proc_maps_fuzz) echo 32768 ;;
    record_reader_fuzz | record_roundtrip_fuzz) echo 65536 ;;
    # 8 bytes of figures and stream_records_fuzz.cc's 4096 records.
    stream_records_fuzz) echo 196616 ;;
    config_file_fuzz) echo 8192 ;;
    # A config file of a few settings and a command line.
    daemon_options_fuzz) echo 2048 ;;
    # Requests are short; the protocol's 64 KiB (kMaxRequestBytes) and
    # deep nesting are left to the seeds, replayed whole.
    control_protocol_fuzz) echo 4096 ;;
    time_args_fuzz | size_args_fuzz) echo 64 ;;
    # A command line of a few dozen short arguments.
    cli_args_fuzz) echo 1024 ;;
    *) echo 4096 ;;
  esac
}

all="proc_stat_fuzz proc_status_fuzz proc_statm_fuzz proc_smaps_rollup_fuzz
proc_maps_fuzz proc_cgroup_fuzz pagemap_fuzz record_reader_fuzz
record_roundtrip_fuzz stream_records_fuzz config_file_fuzz
daemon_options_fuzz control_protocol_fuzz time_args_fuzz size_args_fuzz
cli_args_fuzz"
[ $# -gt 0 ] || set -- $all

# UBSan's reports name the frames that led there too.
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
scratch=$(mktemp -d "${TMPDIR:-/tmp}/rssaudit-fuzz.XXXXXX")
trap 'rm -rf "$scratch"' EXIT INT TERM
findings=$build/fuzz-findings
failed=0
summary=""

# report TARGET LOG [SEED]: what broke, as libFuzzer and the sanitizers
# said, and where the reproducers are kept.
report() {
  failed=1
  grep -E 'ERROR: |broken promise|runtime error|SUMMARY|^    #[0-4] ' \
    "$2" | head -n 20 | sed 's/^/  /'
  mkdir -p "$findings/$1"
  cp "$2" "$findings/$1/last-run.log"
  for a in $(ls "$scratch/$1.artifacts"); do
    mv "$scratch/$1.artifacts/$a" "$findings/$1/$a"
    echo "  reproducer: $findings/$1/$a"
    echo "  reproduce:  $build/fuzz/$1 $findings/$1/$a"
  done
  if [ -n "${3:-}" ]; then
    echo "  reproducer (a committed seed): $3"
    echo "  reproduce:  $build/fuzz/$1 $3"
  fi
  echo "  log: $findings/$1/last-run.log"
}

for target in "$@"; do
  bin=$build/fuzz/$target
  if [ ! -x "$bin" ]; then
    echo "$target: no $bin (cmake --build $build --target fuzz_all)" >&2
    exit 2
  fi
  seeds=$here/corpus/$target
  corpus=$scratch/$target
  artifacts=$scratch/$target.artifacts
  mkdir -p "$corpus" "$artifacts"
  echo "== $target: ${seconds}s, max_len $(max_len "$target")"

  # Every committed seed first, whole: the fuzzing below cuts inputs at
  # max_len, which would shorten a large regression seed (such as
  # control_protocol_fuzz/deep-nesting) into a harmless one.
  log=$scratch/$target.seeds.log
  status=0
  if [ -d "$seeds" ] && [ -n "$(ls "$seeds")" ]; then
    "$bin" -timeout=25 -rss_limit_mb=2048 -artifact_prefix="$artifacts/" \
      "$seeds"/* >"$log" 2>&1 || status=$?
    cp "$seeds"/* "$corpus"/
  fi
  if [ "$status" -ne 0 ]; then
    line="$target: a seed fails (exit $status), not fuzzed: FINDING"
    report "$target" "$log" "$(sed -n 's/^Running: //p' "$log" | tail -n 1)"
  else
    log=$scratch/$target.log
    "$bin" -max_total_time="$seconds" -max_len="$(max_len "$target")" \
      -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$artifacts/" "$corpus" >"$log" 2>&1 || status=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" |
      tail -n 1)
    files=$(ls "$corpus" | wc -l)
    line="$target: ${execs:-?} executions, corpus $files files"
    if [ "$status" -ne 0 ] || [ -n "$(ls "$artifacts")" ]; then
      line="$line, FINDING (exit $status)"
      report "$target" "$log"
    fi
  fi
  echo "$line"
  summary="$summary$line
"
done
echo "== summary"
printf '%s' "$summary"
exit $failed
