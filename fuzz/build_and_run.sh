#!/bin/sh
# Builds the fuzz targets (clang, RSSAUDIT_FUZZ=ON) in BUILD_DIR and runs
# each for SECONDS with fuzz/run.sh: what CI runs after the test suite.
#
#   fuzz/build_and_run.sh SECONDS [BUILD_DIR]    (default: build-fuzz)
set -eu
cd "$(dirname "$0")/.."
seconds=${1:?usage: fuzz/build_and_run.sh SECONDS [BUILD_DIR]}
dir=${2:-build-fuzz}
cmake -S . -B "$dir" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DRSSAUDIT_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$dir" --target fuzz_all -j2
exec fuzz/run.sh "$dir" "$seconds"
