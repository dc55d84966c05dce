#!/usr/bin/env bash
# The whole test suite again, built with AddressSanitizer and
# UndefinedBehaviorSanitizer (gcc; -fno-sanitize-recover: a report fails
# the test whose process made it, with the report in its output). The BPF
# programs are built as always: only the user-space code is instrumented.
# Usage (root, as the suite): tests/sanitized_suite.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-asan}
san="-fsanitize=address,undefined -fno-sanitize-recover=all"
san+=" -fno-omit-frame-pointer -Wno-maybe-uninitialized"
# Not -Werror: gcc 12 warns maybe-uninitialized inside libstdc++ (std::regex)
# under ASan; the main build holds the warnings to zero.
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS="$san" -DCMAKE_CXX_FLAGS="$san" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined"
cmake --build "$dir" -j2
# Every child the tests start (rssauditd, the CLI) is instrumented too and
# inherits these: stop at the first report, with its stack.
export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:print_summary=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --test-dir "$dir" --output-on-failure -j2
