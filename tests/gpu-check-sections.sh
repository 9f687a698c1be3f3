#!/usr/bin/env bash
# tests/gpu-check-sections.sh: how tests/gpu-check.sh runs its steps, sourced by it (nothing here
# runs on its own). Each step is a section of the one log: a header with its exit code and seconds,
# then its output; counted as passed, failed or skipped, or informational (shown, never failing the
# check); cut or skipped under GPU_CHECK_BUDGET so that the check ends within it; in the background
# for CPU work beside GPU sections that time nothing on the host.
#
# Never here: what the check runs or in which order (gpu-check.sh's check()), or anything that
# needs a GPU.

failed=0
passed=0
skipped=0
info_skipped=0  # informational sections skipped for the budget: named, not counted against the check
in_informational=0
log=""
section_timeout=300
budget=""  # GPU_CHECK_BUDGET: seconds for the whole check, counted from the start (bash's SECONDS)

# skip NAME WHY: a step that did not run, named in the log and on stdout.
skip() {
  echo "=== $1 (skipped: $2) ===" | tee -a "$log"
}

# section_limit NAME: sets limit_s to the seconds NAME may run (section_timeout, cut under
# GPU_CHECK_BUDGET so that the check ends within it); returns 1, the section skipped and named,
# when it would start with under 30 s of the budget left (counted, but for an informational one).
limit_s=0
section_limit() {
  limit_s=$section_timeout
  [[ -n $budget ]] || return 0
  local left=$((budget - SECONDS))
  if ((left < 30)); then
    if ((in_informational)); then
      skip "$1" "$left s of GPU_CHECK_BUDGET=$budget left; informational, not counted"
      info_skipped=$((info_skipped + 1))
    else
      skip "$1" "$left s of GPU_CHECK_BUDGET=$budget left"
      skipped=$((skipped + 1))
    fi
    return 1
  fi
  ((limit_s > left - 10)) && limit_s=$((left - 10))
  return 0
}

# finish_section NAME CODE STARTED OUT [ENDED]: appends OUT (a file, removed) to the log under the
# section's header with its exit code and seconds from STARTED to ENDED (default: now), shows the
# header (and the output's tail when it failed) on stdout, and counts it.
finish_section() {
  local name=$1 code=$2 started=$3 out=$4 ended=${5:-$SECONDS}
  local header="=== $name (exit $code, $((ended - started)) s) ==="
  {
    echo
    echo "$header"
    cat "$out"
  } >>"$log"
  echo "$header"
  if ((code != 0)); then
    tail -n 40 "$out"
    failed=$((failed + 1))
  else
    passed=$((passed + 1))
  fi
  rm -f "$out"
}

# section NAME COMMAND...: runs COMMAND, appends its output to the log under a header with its
# exit code and seconds, and shows the header (and the output's tail when it failed) on stdout.
# Under GPU_CHECK_BUDGET a section that would start with under 30 s left is skipped (counted), and
# its limit is cut so that the check ends within the budget.
section() {
  local name=$1 out code started
  shift
  section_limit "$name" || return 0
  out=$(mktemp) || return 1
  started=$SECONDS
  timeout --kill-after=10 "$limit_s" "$@" >"$out" 2>&1
  code=$?
  finish_section "$name" "$code" "$started" "$out"
}

# Sections in the background, for CPU work (builds) beside GPU sections that time nothing on the
# host (the zero-code comparisons check kernel counts): section_background NAME COMMAND... starts
# one, section_join waits for each and writes it into the log as a section of its own (its seconds
# its own wall time; an informational one's failure not counted).
background_pids=()
background_names=()
background_outs=()
background_starts=()
background_info=()
section_background() {
  local name=$1 out
  shift
  section_limit "$name" || return 0
  out=$(mktemp) || return 1
  (
    timeout --kill-after=10 "$limit_s" "$@" >"$out" 2>&1
    code=$?
    echo "$SECONDS" >"$out.ended"  # when it ended, for its section's seconds
    exit "$code"
  ) &
  background_pids+=("$!")
  background_names+=("$name (in the background, beside the sections after it)")
  background_outs+=("$out")
  background_starts+=("$SECONDS")
  background_info+=("$in_informational")
  echo "--- started in the background: $name" | tee -a "$log"
}
section_join() {
  local i code failed_before out ended
  for i in "${!background_pids[@]}"; do
    wait "${background_pids[$i]}"
    code=$?
    out=${background_outs[$i]}
    ended=$(cat "$out.ended" 2>/dev/null) || ended=$SECONDS
    rm -f "$out.ended"
    failed_before=$failed
    finish_section "${background_names[$i]}" "$code" "${background_starts[$i]}" "$out" "$ended"
    ((background_info[i])) && failed=$failed_before
  done
  background_pids=() background_names=() background_outs=() background_starts=() background_info=()
}

# informational NAME COMMAND...: a section whose failure shows in its header and output but does not
# fail the check (the probes measure CUDA and CUPTI; they assert nothing about cuscope), nor does
# its skip for the budget: the check runs them after every counted section.
informational() {
  local failed_before=$failed
  in_informational=1
  section "$@"
  in_informational=0
  failed=$failed_before
}

# run_if_built NAME EXECUTABLE [ARGS...]: a section for EXECUTABLE, or a note in the log when it was
# not built.
run_if_built() {
  local name=$1 exe=$2
  if [[ -x $exe ]]; then
    section "$name" "$exe" "${@:3}"
  else
    skip "$name" "$exe not built"
  fi
}

# section_exit NAME: the exit code of the last section named exactly NAME in the log; nothing when
# none ran (skipped, or not yet).
section_exit() {
  awk -v prefix="=== $1 (exit " 'index($0, prefix) == 1 { line = $0 } END { print line }' "$log" |
    sed -n 's/.* (exit \([0-9]*\), [0-9]* s) ===$/\1/p'
}

# gpu_detach_test NAME: the GPU tests' detach cases alone (their tag [detach]: after the last step
# window, between windows, between the clock's windows, while recording is off, a sample), as a
# counted section; past 40 s every thread's stack from the tests' watchdog (exit 3), past 45 s
# run_with_stacks ends it (the five take about 25 s: 1 s of waiting for each detach's records, the
# clock's case 9 s of 1.5 s steps, and the sample's 5 s of 1.5 s waits).
gpu_detach_test() {
  local exe=$BUILD_DIR/tests/gpu/cuscope_gpu_tests
  if [[ ! -x $exe ]]; then
    skip "$1" "$exe not built"
    return
  fi
  # The tests' own watchdog first (40 s: every thread's stack with symbols, then exit 3; the GPU
  # machine may have no gdb), run_with_stacks's 45 s behind it.
  section "$1" env GPU_TEST_STALL_S=40 bash -c "$(declare -f run_with_stacks); run_with_stacks \"\$@\"" \
    run_with_stacks 45 "$exe" '[detach]'
}

# hung_exit CODE: whether a section's exit code says it hung: run_with_stacks ended it (124), the
# section's timeout killed it (137), or the GPU tests' watchdog did (3; a run with failed cases exits
# 1, tests/gpu/gpu_main.cpp).
hung_exit() { [[ $1 == 124 || $1 == 137 || $1 == 3 ]]; }

# crashed_exit CODE: whether a section's exit code is a crash's signal: SIGABRT (134), SIGBUS (135),
# SIGFPE (136) or SIGSEGV (139).
crashed_exit() { [[ $1 =~ ^(134|135|136|139)$ ]]; }

# run_with_stacks SECONDS COMMAND...: runs COMMAND; past SECONDS, prints every thread's stack
# (gdb, else eu-stack, else cuda-gdb, where the machine has one) and ends it (exit 124). For the
# trial below: a hang there named only the test case it was in (2026-11-27).
run_with_stacks() {
  local limit=$1 pid i code
  shift
  "$@" &
  pid=$!
  for ((i = 0; i < limit * 10; ++i)); do
    if ! kill -0 "$pid" 2>/dev/null; then
      wait "$pid"
      return
    fi
    sleep 0.1
  done
  echo "gpu-check: still running after $limit s; every thread's stack:"
  if command -v gdb >/dev/null; then
    timeout 60 gdb -p "$pid" -batch -ex 'thread apply all bt' 2>&1 | grep -v '^\[New LWP'
  elif command -v eu-stack >/dev/null; then
    timeout 60 eu-stack -p "$pid" 2>&1
  elif [[ -x /usr/local/cuda/bin/cuda-gdb ]]; then
    timeout 60 /usr/local/cuda/bin/cuda-gdb -p "$pid" -batch -ex 'thread apply all bt' 2>&1 | grep -v '^\[New LWP'
  else
    echo "gpu-check: no gdb, eu-stack or cuda-gdb here: no stacks"
  fi
  kill -TERM "$pid" 2>/dev/null
  sleep 2
  kill -KILL "$pid" 2>/dev/null
  wait "$pid"
  code=$?
  echo "gpu-check: ended it (exit $code)"
  return 124
}
