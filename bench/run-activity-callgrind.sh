#!/usr/bin/env bash
# bench/run-activity-callgrind.sh: instructions per kernel record (with its external-correlation
# and API records) through consume_buffer, for BM_activity/1, /100 and /10000, counted by
# valgrind's callgrind, which is repeatable where times are not. Builds the Release cuscope_bench,
# runs each workload with 10 and with 30 one-pass repetitions (--benchmark_min_time=0: one
# iteration each) and prints (I(30) - I(10)) / (20 × 10,000 kernels): the warm-up cancels out.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! command -v valgrind >/dev/null; then
  echo "run-activity-callgrind.sh: valgrind not found (apt-get install valgrind)" >&2
  exit 2
fi
cmake --preset release >/dev/null
cmake --build --preset release --target cuscope_bench >/dev/null
exe=build/release/bench/cuscope_bench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

count() {  # count PAIRS REPETITIONS: instructions in consume_buffer and its callees
  valgrind --tool=callgrind --toggle-collect='*consume_buffer*' --callgrind-out-file="$tmp/out.$1.$2" \
    "$exe" --benchmark_filter="BM_activity/$1\$" --benchmark_min_time=0 --benchmark_repetitions="$2" \
    --benchmark_enable_random_interleaving=false >"$tmp/log.$1.$2" 2>&1
  callgrind_annotate "$tmp/out.$1.$2" | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1; exit }'
}
for pairs in 1 100 10000; do
  one=$(count "$pairs" 10)
  three=$(count "$pairs" 30)
  awk -v a="$one" -v b="$three" -v p="$pairs" \
    'BEGIN { printf "instructions per kernel, %s (range, kernel) pairs: %.1f\n", p, (b - a) / 20 / 10000 }'
done
