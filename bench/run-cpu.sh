#!/usr/bin/env bash
# bench/run-cpu.sh: builds the CPU benchmarks in Release (preset "release") and runs them: one
# table on stdout, and the same numbers as JSON in bench/results/cpu-<YYYY-MM-DD>-<commit>.json (UTC
# date, short commit: a later run of the same day does not overwrite an earlier one's).
# Extra arguments go to the benchmark program (e.g. --benchmark_filter=BM_scope).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ ${1:-} == --help || ${1:-} == -h ]]; then
  echo "usage: bench/run-cpu.sh [benchmark options]   (see bench/README.md)"
  exit 0
fi

build_log=$(mktemp)
trap 'rm -f "$build_log"' EXIT
if ! { cmake --preset release && cmake --build --preset release --target cuscope_bench; } >"$build_log" 2>&1; then
  cat "$build_log" >&2
  echo "run-cpu.sh: the build failed" >&2
  exit 1
fi

commit=$(git rev-parse HEAD 2>/dev/null) || commit="unknown (not a git checkout)"
if [[ -n $(git status --porcelain -- . ':!bench/results' 2>/dev/null) ]]; then commit="$commit (uncommitted changes)"; fi
mkdir -p bench/results
json="bench/results/cpu-$(date -u +%F)-$(git rev-parse --short HEAD 2>/dev/null || echo unknown).json"
# The floors and the scopes are measured with no NVTX tool attached.
env -u NVTX_INJECTION64_PATH -u NVTX_INJECTION32_PATH \
  build/release/bench/cuscope_bench --json="$json" --git-commit="$commit" "$@"
echo "wrote $json"
