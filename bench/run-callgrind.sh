#!/usr/bin/env bash
# bench/run-callgrind.sh: instructions per enabled scope (enter + exit, host only), counted by
# valgrind's callgrind, which is repeatable where times are not. Builds the Release program
# bench/scope_instructions.cpp, counts run_scopes() with N and with 2N scopes, and prints
# (I(2N) - I(N)) / N. Compares with the committed bench/results/instructions.json and exits 1
# when the count grew by more than 2% (a regression to explain), 0 otherwise.
#   --update   write the new count to bench/results/instructions.json (with the commit)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
baseline=bench/results/instructions.json
if ! command -v valgrind >/dev/null; then
  echo "run-callgrind.sh: valgrind not found (apt-get install valgrind)" >&2
  exit 2
fi
cmake --preset release >/dev/null
cmake --build --preset release --target cuscope_scope_instructions >/dev/null
exe=build/release/bench/cuscope_scope_instructions
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

count() {  # count N: instructions callgrind attributes to run_scopes(N) and what it calls
  env -u NVTX_INJECTION64_PATH valgrind --tool=callgrind --toggle-collect=run_scopes \
    --callgrind-out-file="$tmp/out.$1" "$exe" "$1" >"$tmp/log.$1" 2>&1
  callgrind_annotate "$tmp/out.$1" | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1; exit }'
}

n=20000
one=$(count $n)
two=$(count $((2 * n)))
per_scope=$(awk -v a="$one" -v b="$two" -v n="$n" 'BEGIN { printf "%.1f", (b - a) / n }')
clock=$(sed -n 's/.*clock: //p' "$tmp/log.$n")
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
echo "instructions per enabled scope (enter + exit, host only): $per_scope"
echo "clock: $clock"

if [[ ${1:-} == --update ]]; then
  printf '{\n  "instructions_per_scope": %s,\n  "clock": "%s",\n  "commit": "%s",\n  "date": "%s"\n}\n' \
    "$per_scope" "$clock" "$commit" "$(date -u +%F)" >"$baseline"
  echo "wrote $baseline"
  exit 0
fi
if [[ ! -f $baseline ]]; then
  echo "no baseline yet: run bench/run-callgrind.sh --update and commit $baseline"
  exit 0
fi
base=$(sed -n 's/.*"instructions_per_scope": \([0-9.]*\).*/\1/p' "$baseline")
echo "baseline: $base (bench/results/instructions.json)"
if awk -v now="$per_scope" -v base="$base" 'BEGIN { exit !(now > base * 1.02) }'; then
  echo "REGRESSION: $per_scope instructions per scope against $base (+2% allowed)"
  exit 1
fi
echo "no regression (within 2% of the baseline)"
