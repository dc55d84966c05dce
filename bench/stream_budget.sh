#!/usr/bin/env bash
# What a stream size loses on this host: for each KIB, rssauditd with
# --stream-kib KIB, the fault loop (bench/fault_loop) pinned to each CPU and
# a fork storm of /bin/true beside it for SECONDS; prints per size the
# updates audited, the records lost (drops), the losses they made and the
# loop's longest stall. 2 CPUs x 1 Ki slots x 56 bytes = 112 KiB gives
# each CPU what a 32 MiB budget would give each of 384 (issue 40).
# (Each CPU gets a power of two of 56-byte slots within KIB, 512 at least;
# 0: automatic, capture/bpf_capture.h.)
# RSSAUDITD=path measures another daemon build.
# Usage (root): bench/stream_budget.sh BUILD [SECONDS] KIB...
set -euo pipefail
build=${1:?usage: stream_budget.sh BUILD [SECONDS] KIB...}
shift
seconds=15
if [ $# -gt 1 ]; then seconds=$1; shift; fi
cpus=$(nproc)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for kib in "$@"; do
  "${RSSAUDITD:-$build/daemon/rssauditd}" --stream-kib "$kib" --db "$dir/h.db" \
    --duration $((seconds + 8)) --socket none >"$dir/log" 2>&1 &
  daemon=$!
  sleep 3
  loops=()
  for ((c = 0; c < cpus; c++)); do
    "$build/bench/fault_loop" 1000000 "$c" >/dev/null & loops+=($!)
  done
  # The storm in a subshell: its `wait` waits for its own children only.
  (end=$((SECONDS + seconds))
   while [ $SECONDS -lt $end ]; do
     for i in $(seq 20); do /bin/true & done
     wait
   done)
  kill "${loops[@]}" 2>/dev/null || true
  wait "${loops[@]}" 2>/dev/null || true
  wait "$daemon" || true
  summary=$(grep '^summary' "$dir/log" | tail -1)
  field() { grep -o " $1=[^ ]*" <<<"$summary" | cut -d= -f2; }
  printf 'stream-kib %8s  updates %9s  drops %7s  losses %5s  loop stall max %ss\n' \
    "$kib" "$(field updates)" "$(field drops)" "$(field losses)" \
    "$(field loop_delay_max_s)"
done
