#!/usr/bin/env bash
# bench/run-callgrind.sh: instructions per enabled scope (enter + exit, host only), and per NVTX
# push/pop as zero-code mode's libcuscope_inject.so receives it (ASCII message; registered string in
# a domain; emit_nvtx()-style messages; a left-out domain, beside two calls to empty functions), counted by valgrind's callgrind,
# which is repeatable where times are not. Builds the Release program bench/scope_instructions.cpp,
# counts run_scopes() (run_injected()) with N and with 2N, and prints (I(2N) - I(N)) / N. Compares
# with the committed bench/results/instructions.json and exits 1 when a count grew by more than 2%
# (a regression to explain), 0 otherwise.
#   --update   write the new count to bench/results/instructions.json (with the commit)
#   --update-windows   write the counts of a window that repeats (two step() calls, with and without
#              a scope in the window, and with 255 more threads the closing step() marks) to
#              bench/results/instructions-windows.json (with the commit)
#   --update-tracing   write the counts of a scope while CUPTI traces (`cupti`, `launch` modes), of
#              one launch noted by the launch callback (`note_launch`) and of one synchronize noted
#              by the call callbacks (`call_note`) to bench/results/instructions-tracing.json (with
#              the commit)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
baseline=bench/results/instructions.json
tracing_baseline=bench/results/instructions-tracing.json  # the scope while CUPTI traces (fake hooks)
windows_baseline=bench/results/instructions-windows.json  # a window that repeats
if ! command -v valgrind >/dev/null; then
  echo "run-callgrind.sh: valgrind not found (apt-get install valgrind)" >&2
  exit 2
fi
cmake --preset release >/dev/null
cmake --build --preset release --target cuscope_scope_instructions >/dev/null
exe=build/release/bench/cuscope_scope_instructions
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

count() {  # count FUNCTION N [MODE]: instructions callgrind attributes to FUNCTION(N) and its callees
  env -u NVTX_INJECTION64_PATH valgrind --tool=callgrind --toggle-collect="$1" \
    --callgrind-out-file="$tmp/out.$1.$2" "$exe" "$2" ${3:-} >"$tmp/log.$1.$2" 2>&1
  callgrind_annotate "$tmp/out.$1.$2" | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1; exit }'
}
per_call() {  # per_call FUNCTION [MODE [N]]: (I(2N) - I(N)) / N
  local n=${3:-20000} one two
  one=$(count "$1" $n "${2:-}")
  two=$(count "$1" $((2 * n)) "${2:-}")
  awk -v a="$one" -v b="$two" -v n="$n" 'BEGIN { printf "%.1f", (b - a) / n }'
}

per_scope=$(per_call run_scopes)
per_injected=$(per_call run_injected injected)
per_registered=$(per_call run_registered registered)
per_operator=$(per_call run_operators operators)
per_excluded=$(per_call run_excluded excluded)
per_nvtx_call=$(per_call run_nvtx_call nvtx_call)
per_traced=$(per_call run_scopes traced 8000)
per_cupti=$(per_call run_scopes cupti)
per_launch=$(per_call run_scopes launch)
per_outside=$(per_call run_scopes outside)
per_note=$(per_call run_note_launch note_launch)
per_call_note=$(per_call run_call_notes call_note)
per_window=$(per_call run_windows windows 4000)
per_window_scope=$(per_call run_windows window_scopes 4000)
per_window_threads=$(per_call run_windows windows_threads 4000)
parked=$(sed -n 's/.*parked threads \([0-9]*\).*/\1/p' "$tmp/log.run_windows.8000")  # the last run: windows_threads
per_marked_thread=$(awk -v a="$per_window" -v b="$per_window_threads" -v k="$parked" 'BEGIN { printf "%.1f", (b - a) / k }')
per_scope_in_window=$(awk -v a="$per_window" -v b="$per_window_scope" 'BEGIN { printf "%.1f", b - a }')
clock=$(sed -n 's/.*clock: //p' "$tmp/log.run_scopes.20000")
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
echo "instructions per enabled scope (enter + exit, host only): $per_scope"
echo "instructions per injected NVTX push/pop (zero-code, ASCII message): $per_injected ($(ratio "$per_injected" "$per_scope")x the scope)"
echo "instructions per injected push/pop (registered string, in a domain): $per_registered ($(ratio "$per_registered" "$per_scope")x the scope)"
echo "instructions per injected push/pop of emit_nvtx() messages (a new text at one address each call; with the loop's 160-byte copy): $per_operator ($(ratio "$per_operator" "$per_scope")x the scope)"
echo "instructions per push/pop of a left-out domain: $per_excluded (two empty NVTX calls: $per_nvtx_call)"
echo "instructions per enabled scope in trace mode (CUSCOPE_TRACE): $per_traced ($(ratio "$per_traced" "$per_scope")x the scope)"
echo "instructions per enabled scope while CUPTI traces (default events; correlation push and pop into empty functions): $per_cupti ($(ratio "$per_cupti" "$per_scope")x the scope)"
echo "instructions per enabled scope while CUPTI traces with launch notes (CUSCOPE_ATTRIBUTION=launch): $per_launch ($(ratio "$per_launch" "$per_scope")x the scope)"
echo "instructions per scope outside the step window (a wait step: counted as left out, kept for a window opening inside it): $per_outside"
echo "instructions per launch noted by the launch callback (CUSCOPE_ATTRIBUTION=launch; cuscope's part, not CUPTI's dispatch): $per_note"
echo "instructions per synchronize noted by the call callbacks, entry and exit (no synchronization records; cuscope's part, not CUPTI's dispatch): $per_call_note"
echo "instructions per window cycle (step() opening a window that repeats, step() closing it; no scope): $per_window"
echo "instructions per scope in such a window (its exit the thread's first since the last window closed): $per_scope_in_window ($(ratio "$per_scope_in_window" "$per_scope")x the scope)"
echo "instructions per thread the closing step() marks ($parked threads, each with a scope open): $per_marked_thread"
echo "clock: $clock"

if [[ ${1:-} == --update-tracing ]]; then
  printf '{\n  "instructions_per_scope": %s,\n  "instructions_per_scope_cupti_fake_hooks": %s,\n  "instructions_per_scope_launch_notes": %s,\n  "instructions_per_launch_note": %s,\n  "instructions_per_call_note": %s,\n  "clock": "%s",\n  "commit": "%s",\n  "date": "%s"\n}\n' \
    "$per_scope" "$per_cupti" "$per_launch" "$per_note" "$per_call_note" "$clock" "$commit" "$(date -u +%F)" >"$tracing_baseline"
  echo "wrote $tracing_baseline"
  exit 0
fi
if [[ ${1:-} == --update-windows ]]; then
  printf '{\n  "instructions_per_scope": %s,\n  "instructions_per_window_cycle": %s,\n  "instructions_per_scope_in_window": %s,\n  "instructions_per_marked_thread": %s,\n  "clock": "%s",\n  "commit": "%s",\n  "date": "%s"\n}\n' \
    "$per_scope" "$per_window" "$per_scope_in_window" "$per_marked_thread" "$clock" "$commit" "$(date -u +%F)" >"$windows_baseline"
  echo "wrote $windows_baseline"
  exit 0
fi
if [[ ${1:-} == --update ]]; then
  printf '{\n  "instructions_per_scope": %s,\n  "instructions_per_injected_range": %s,\n  "instructions_per_injected_registered": %s,\n  "instructions_per_injected_operator": %s,\n  "instructions_per_excluded_domain": %s,\n  "instructions_per_two_empty_nvtx_calls": %s,\n  "instructions_per_traced_scope": %s,\n  "instructions_per_scope_outside_window": %s,\n  "clock": "%s",\n  "commit": "%s",\n  "date": "%s"\n}\n' \
    "$per_scope" "$per_injected" "$per_registered" "$per_operator" "$per_excluded" "$per_nvtx_call" "$per_traced" "$per_outside" "$clock" "$commit" "$(date -u +%F)" >"$baseline"
  echo "wrote $baseline"
  exit 0
fi
if [[ ! -f $baseline ]]; then
  echo "no baseline yet: run bench/run-callgrind.sh --update and commit $baseline"
  exit 0
fi
status=0
check() {  # check KEY NOW WHAT [FILE]
  local base
  base=$(sed -n "s/.*\"$1\": \([0-9.]*\).*/\1/p" "${4:-$baseline}" 2>/dev/null)
  if [[ -z $base ]]; then
    echo "$3: no baseline yet (bench/run-callgrind.sh --update or --update-tracing)"
  elif awk -v now="$2" -v base="$base" 'BEGIN { exit !(now > base * 1.02) }'; then
    echo "REGRESSION: $2 instructions per $3 against $base (+2% allowed)"
    status=1
  else
    echo "$3: $2 against the baseline $base: no regression (within 2%)"
  fi
}
check instructions_per_scope "$per_scope" scope
check instructions_per_injected_range "$per_injected" "injected range"
check instructions_per_injected_registered "$per_registered" "injected registered range"
check instructions_per_injected_operator "$per_operator" "injected emit_nvtx() range"
check instructions_per_excluded_domain "$per_excluded" "left-out domain's range"
check instructions_per_traced_scope "$per_traced" "scope in trace mode"
check instructions_per_scope_cupti_fake_hooks "$per_cupti" "scope while CUPTI traces (fake hooks)" "$tracing_baseline"
check instructions_per_scope_launch_notes "$per_launch" "scope while CUPTI traces with launch notes" "$tracing_baseline"
check instructions_per_launch_note "$per_note" "launch noted by the launch callback" "$tracing_baseline"
check instructions_per_call_note "$per_call_note" "synchronize noted by the call callbacks" "$tracing_baseline"
check instructions_per_window_cycle "$per_window" "window cycle" "$windows_baseline"
check instructions_per_scope_in_window "$per_scope_in_window" "scope in a window that repeats" "$windows_baseline"
check instructions_per_marked_thread "$per_marked_thread" "thread marked by the window's close" "$windows_baseline"
exit $status
