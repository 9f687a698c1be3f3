#!/usr/bin/env bash
# tests/gpu-check.sh: builds cuscope in Release on a machine with a GPU and runs everything that
# needs one (GPU tests, all CTest tests, the demo, GPU benchmarks), writing a single log.
#
# The GPU machine has CUDA, CMake and Ninja but no Debian -dev packages and no network, so
# `--fetch-deps`, run on the Debian development machine, unpacks the packages the build needs into
# .gpu-deps/ (git-ignored), nanobind into .gpu-deps/python, which travels with the working tree and
# is used when present.
#
# Time (the H200 of 2026-11-27, a1456a7's sections; docs/validation/README.md has the plan): outside
# the sections ~9; configure 10, the cost targets' build 43, GPU tests 8 + 7, and their five detach
# cases alone after each (3 + 3 on the H200 of 2026-11-28 for the first; the five about 25 s each
# run, 45 s at most, never yet run there); bench 31 (8 rounds) and, never yet run there, about 10 s
# of its detaches between windows, 6 of its alternating blocks and 1-3 of its finalizes between
# parts (about 50-60 s in all); PyTorch step 162 (13 fresh processes); zero-code 52 + 6 with the
# full build (35) and the probes' build (9) beside them, say 68; ctest 16 (the GPU tests alone) + 45
# (the rest, the 65 s consumer build started first with 8 jobs); demos 9: about 480 s counted, and up
# to 20 s more where the bench's after_window waits for its detaches. Then informational: the CPU
# bench ~15, probes 40, ncu 2, the CUPTI-timed trial 8 and its two-stream case twice apart, 2 (15 s
# each, and the stacks, where it hangs again): 65-115 s; whatever the budget cuts of them counts for
# nothing. About 545 s in all, inside GPU_CHECK_BUDGET=545, the informational sections cut first.
set -uo pipefail

readonly DEPS=(libabsl-dev libabsl20220623 libspdlog-dev libspdlog1.10 libfmt-dev libfmt9 catch2
  nlohmann-json3-dev libbenchmark-dev libbenchmark1debian)
# What the Python package's build (python/CMakeLists.txt) asks python3 for: nanobind's CMake files.
readonly PYTHON_DEPS=(nanobind==3.1.0)
readonly DEPS_DIR=.gpu-deps
readonly BUILD_DIR=build/gpu-check
# Raw CUDA/CUPTI probes (docs/validation/probes, no cuscope), built with nvcc alone and run first.
readonly PROBE_DIR=docs/validation/probes
# Which of them, in order: docs/validation/probes/probes.txt, which the CTest build of the probes reads too.
mapfile -t PROBES < <(grep -v '^#' "$(dirname "${BASH_SOURCE[0]}")/../$PROBE_DIR/probes.txt" | grep .)
readonly PROBES
# The GPU tests but the detach case (run apart, gpu_detach_test): Catch2 2.13's spec. An exclusion
# alone ('~[detach]') selects the hidden cases too: the million launches ([.slow], 8-10 s, its own
# CTest test) and the two-GPU case ([.multi-gpu], which fails on one GPU at REQUIRE(count >= 2)).
# Without a spec, as before the detach case, Catch leaves them out: so '~[.]' beside it.
readonly GPU_TESTS_BUT_DETACH='~[detach]~[.]'

usage() {
  cat <<'EOF'
usage: tests/gpu-check.sh [--probes | --fetch-deps | --help]

  (no option)   Configure a Release build in build/gpu-check (Ninja, preset "gpu"), then run the
                steps in the order of what a short lease must not miss (issue 24, "Leave it on"),
                every counted step before the informational ones:
                  1. build what the cost check needs (GPU tests, GPU bench, CLI, demo, injection,
                     the minimal CUPTI client's injection library, Python module); the GPU tests
                     with each attribution (launch notes, the default, then external correlation),
                     their detach case apart after each (past 25 s, every thread's stack; one
                     that hangs leaves the second out, one that hangs or crashes the bench's
                     transformer.after_window);
                     the GPU bench (its JSON next to the log); the PyTorch step bare, under
                     `cuscope run`, under torch.profiler and under the minimal CUPTI client
                     (bench/torch_overhead.py);
                  2. the PyTorch comparisons (tests/gpu/torch_compare.py), with everything else
                     and the raw probes built in the background meanwhile (nothing timed on the
                     host is read from those comparisons);
                  3. ctest (all tests but label devtools: those labelled gpu one at a time, then
                     the rest in parallel), the demo, the demo with counters, under
                     compute-sanitizer, under `cuscope run`;
                  4. informational, last: the CPU bench, the raw probes (below), ncu, and the GPU tests with
                     their events timed by CUPTI (a trial: past 20 s every thread's stack).
                Expected on the H200 of 2026-11-27: about 435 s for steps 1-3 and 65-90 s for 4
                (docs/validation/README.md, "the next lease's plan").
                Writes one log to $OUT/gpu-check.log (or build/gpu-check/gpu-check.log): date,
                commit, GPU, driver, nvcc, CUPTI first, then one "=== <name> (exit <code>, <s> s) ==="
                section per step, and a last line "gpu-check: P passed, F failed, S skipped". Every
                folder of results next to the log is packed into <folder>.tgz at the end.
                Goes on after failures; exits 0 only when no section failed and none was skipped
                for the budget (an informational section's failure or skip shows in the log but
                does not count).
                GPU_CHECK_BUDGET: seconds for the whole check (default: none). A step that would
                start with under 30 s left is skipped and named; a step's limit is cut to what is
                left. Set it a little under the device call's limit, so that the log comes back.
                CUDAARCHS sets the CUDA architectures (default 90); GPU_CHECK_TIMEOUT the
                seconds each section may run (default 300; a probe 150); GPU_BENCH_ARGS the GPU
                bench's run size (default "--rounds=8 --launches=20000 --steps=200 --stall-limit=45"), GPU_BENCH_TIMEOUT
                its section's limit (default 180); GPU_CHECK_CPU_BENCH_ARGS the CPU bench's
                (default "--benchmark_repetitions=3 --benchmark_min_time=0.05"); TORCH_OVERHEAD_ROUNDS the
                PyTorch step's rounds (default 3, each a fresh process per configuration) and
                TORCH_OVERHEAD_CONFIGS its configurations (default: bare, cuscope, torch_profiler,
                and minimal_cupti where built; bench/torch_overhead.py lists all). Uses
                .gpu-deps/ when it exists.
  --probes      Only the probes: build the probes that docs/validation/probes/probes.txt lists side by side
                with nvcc (no CMake; probes/build.sh), then run each, one section each, into the
                same log (about a minute to build, well under a minute each to run on an H100).
  --fetch-deps  On the Debian development machine: apt-get download the packages the build needs
                and unpack them into .gpu-deps/ (which must be git-ignored), pip install the
                Python package's build needs (nanobind) into .gpu-deps/python, then print its size.
  --help        This text.
EOF
}

fetch_deps() {
  local tmp
  tmp=$(mktemp -d) || return 1
  # shellcheck disable=SC2064  # expand $tmp now: it is local to this function
  trap "rm -rf '$tmp'" EXIT
  echo "downloading ${#DEPS[@]} packages into $tmp"
  if ! (cd "$tmp" && apt-get download "${DEPS[@]}"); then
    echo "gpu-check: apt-get download failed" >&2
    return 1
  fi
  rm -rf "$DEPS_DIR"
  mkdir -p "$DEPS_DIR"
  local deb
  for deb in "$tmp"/*.deb; do
    dpkg -x "$deb" "$DEPS_DIR" || {
      echo "gpu-check: dpkg -x $deb failed" >&2
      return 1
    }
  done
  if ! python3 -m pip install --quiet --root-user-action=ignore --no-deps --target "$DEPS_DIR/python" "${PYTHON_DEPS[@]}"; then
    echo "gpu-check: pip install ${PYTHON_DEPS[*]} failed" >&2
    return 1
  fi
  echo "unpacked into $DEPS_DIR: $(du -sh "$DEPS_DIR" | cut -f1)"
  echo "make sure $DEPS_DIR/ is in .gitignore, and carry it to the GPU machine"
}

use_deps() {
  [[ -d $DEPS_DIR ]] || return 0
  export CMAKE_PREFIX_PATH="$PWD/$DEPS_DIR/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export LD_LIBRARY_PATH="$PWD/$DEPS_DIR/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PYTHONPATH="$PWD/$DEPS_DIR/python${PYTHONPATH:+:$PYTHONPATH}"
}

# The commit measured: GPU_CHECK_COMMIT when set (the GPU machine's copy may have no .git), else git's.
commit_id() {
  if [[ -n ${GPU_CHECK_COMMIT:-} ]]; then
    echo "$GPU_CHECK_COMMIT"
  else
    git rev-parse HEAD 2>/dev/null || echo "unknown (no git commit; set GPU_CHECK_COMMIT)"
  fi
}

log_header() {
  local commit dirty=""
  commit=$(commit_id)
  if [[ -z ${GPU_CHECK_COMMIT:-} && -n $(git status --porcelain 2>/dev/null) ]]; then dirty=" dirty"; fi
  echo "date:   $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "commit: $commit$dirty"
  if command -v nvidia-smi >/dev/null; then
    echo "gpu:    $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1)"
  else
    echo "gpu:    none found (no nvidia-smi)"
  fi
  if command -v nvcc >/dev/null; then
    echo "nvcc:   $(nvcc --version 2>&1 | tail -n 1)"
  else
    echo "nvcc:   not found"
  fi
  # CUPTI: the API version the library the build links reports (cuptiGetVersion), and its file.
  local cupti
  cupti=$(readlink -f /usr/local/cuda/lib64/libcupti.so 2>/dev/null)
  echo "cupti:  $(python3 -c "import ctypes, sys; l = ctypes.CDLL(sys.argv[1]); v = ctypes.c_uint32()
print('API version', v.value if l.cuptiGetVersion(ctypes.byref(v)) == 0 else 'unknown')" "${cupti:-libcupti.so}" 2>&1) (${cupti:-not found})"
  if [[ -d $DEPS_DIR ]]; then echo "deps:   $PWD/$DEPS_DIR/usr"; else echo "deps:   system"; fi
}

# The sections, their budget and their counts: gpu-check-sections.sh.
# shellcheck source-path=SCRIPTDIR source=gpu-check-sections.sh
source "$(dirname "${BASH_SOURCE[0]}")/gpu-check-sections.sh"

# probe_build [background]: builds the probes of PROBES side by side with nvcc
# (docs/validation/probes/build.sh prints each command line), in the background when asked (beside
# sections that time nothing on the host); probe_runs runs each in a section of its own. A probe
# exits 77 without a GPU. Informational both.
readonly PROBE_OUT="$BUILD_DIR/probes"
probe_build() {
  local section_timeout=150
  in_informational=1
  if [[ ${1:-} == background ]]; then
    section_background "probe: build ${PROBES[*]}" "$PROBE_DIR/build.sh" "$PROBE_OUT" "${PROBES[@]}"
    in_informational=0
  else
    in_informational=0
    informational "probe: build ${PROBES[*]}" "$PROBE_DIR/build.sh" "$PROBE_OUT" "${PROBES[@]}"
  fi
}
probe_runs() {
  local section_timeout=150 name
  for name in "${PROBES[@]}"; do
    if [[ -x $PROBE_OUT/$name ]]; then
      informational "probe: $name" "$PROBE_OUT/$name"
    else
      skip "probe: $name" "it did not build"
    fi
  done
}

# pack_folders DIR: each folder in DIR becomes DIR/<folder>.tgz. The device call brings back only
# a few files from $OUT (on 2026-11-26, 8: the PyTorch step's own JSON was left out), so every
# result is one file: the log, the bench's JSON, and one archive per folder.
pack_folders() {
  local dir
  for dir in "$1"/*/; do
    [[ -d $dir ]] || continue
    dir=${dir%/}
    tar czf "$dir.tgz" -C "$1" "$(basename "$dir")" && rm -rf "$dir"
  done
}

# start_log: the environment every mode needs, and the log with its header.
start_log() {
  use_deps
  if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
    export PATH="/usr/local/cuda/bin:$PATH"
  fi
  section_timeout=${GPU_CHECK_TIMEOUT:-300}
  mkdir -p "$BUILD_DIR" || return 1
  log="${OUT:-$BUILD_DIR}/gpu-check.log"
  log_header >"$log"
  cat "$log"
}

probes_only() {
  start_log || return 1
  probe_build
  probe_runs
  echo "log: $log"
  return "$failed"
}

# cost_targets: the CMake targets the first steps need, those of them this configuration has (the
# Python module only where nanobind and Python's headers were found).
cost_targets() {
  local all target
  all=$(cmake --build "$BUILD_DIR" --target help 2>/dev/null)
  for target in cuscope_gpu_tests cuscope_gpu_bench cuscope_cli cuscope_demo cuscope_inject cuscope_minimal_cupti _cuscope; do
    grep -Eq "(^|[ /])$target(:| )" <<<"$all" && echo "$target"
  done
}

check() {
  start_log || return 1
  budget=${GPU_CHECK_BUDGET:-}
  [[ -n $budget ]] && echo "budget: $budget s (GPU_CHECK_BUDGET)" | tee -a "$log"
  local results="${OUT:-$BUILD_DIR}" traces="$BUILD_DIR/gpu-test-traces" commit
  commit=$(commit_id)

  # 1. What the cost issue needs, first: a short lease must not end before the bench has run.
  section configure cmake --preset gpu -B "$BUILD_DIR" "-DCMAKE_CUDA_ARCHITECTURES=${CUDAARCHS:-90}"
  local targets
  mapfile -t targets < <(cost_targets)
  section "build: ${targets[*]}" cmake --build "$BUILD_DIR" --target "${targets[@]}"
  # Each GPU test case's session also writes a trace (tests/session_fixture.hpp), packed next to
  # the log: what tests/data/gpu/ replays in CI comes from here.
  rm -rf "$traces" && mkdir -p "$traces"
  # The detach cases ([detach]: cuptiFinalize from a CUDA call's exit callback, after the last window
  # and between windows, CUPTI attached again) run apart from the others, once per attribution, under
  # run_with_stacks: a hang there would otherwise take a 300 s section limit twice, with no word of
  # where (the last window's took about 1.2 s; the one between windows waits about 1 s per window).
  export GPU_TEST_TRACE_DIR="$PWD/$traces"
  run_if_built "gpu tests" "$BUILD_DIR/tests/gpu/cuscope_gpu_tests" "$GPU_TESTS_BUT_DETACH"
  local detach_section="gpu test: CUPTI detached after the last step window and between windows" detach_exit bench_skip=""
  gpu_detach_test "$detach_section"
  unset GPU_TEST_TRACE_DIR
  tar czf "$results/gpu-test-traces.tgz" -C "$traces" . 2>/dev/null
  # A detach that hung (hung_exit: ended by the tests' watchdog, run_with_stacks or the section's
  # limit) or crashed (a signal) would do so again in the
  # external run (a hang: 30 s, the stacks and their gdb up to 60 s more) and in every round of the
  # bench's transformer.after_window and transformer.between_windows (a hang: the bench's 45 s stall
  # limit, then its rerun): all left out, and the bench's own detach between parts with them
  # (--keep-attached), so that the sections after them keep their budget.
  detach_exit=$(section_exit "$detach_section")
  if hung_exit "$detach_exit" || crashed_exit "$detach_exit"; then bench_skip=transformer.after_window,transformer.between_windows; fi
  # The same exact expectations with CUSCOPE_ATTRIBUTION=external (docs/cupti.md, "Attribution"):
  # external correlation and API records instead of the default's launch callbacks.
  export GPU_TEST_ATTRIBUTION=external
  run_if_built "gpu tests, external correlation (CUSCOPE_ATTRIBUTION=external)" "$BUILD_DIR/tests/gpu/cuscope_gpu_tests" \
    "$GPU_TESTS_BUT_DETACH"
  if hung_exit "$detach_exit"; then
    skip "$detach_section, external correlation" "the detach hung in '$detach_section' above (exit $detach_exit)"
  else
    gpu_detach_test "$detach_section, external correlation"
  fi
  unset GPU_TEST_ATTRIBUTION
  # Benchmarks (bench/README.md): their tables go to the log, their JSON next to it. The bench names
  # each part on stderr, and a part stalled past --stall-limit prints every thread's stack and exits
  # 3 (on 2026-11-26 it hung on an H200 and took 300 s of the lease with no word of where).
  # 8 rounds: the goals read each round's ratio, then their median (about 3.5 s a round on the H200
  # of 2026-11-27, 38 s for 10); 200 steps a round and configuration, for a steady median within each.
  local bench_args
  read -ra bench_args <<<"${GPU_BENCH_ARGS:---rounds=8 --launches=20000 --steps=200 --stall-limit=45}"
  local usual_timeout=$section_timeout
  section_timeout=${GPU_BENCH_TIMEOUT:-180}
  if [[ -n $bench_skip ]]; then
    echo "gpu bench: $bench_skip left out, CUPTI kept attached between parts: '$detach_section' exited $detach_exit above" | tee -a "$log"
    bench_args+=(--skip="$bench_skip" --keep-attached)
  fi
  run_if_built "gpu bench" "$BUILD_DIR/bench/cuscope_gpu_bench" --json="$results/gpu-bench.json" --show-traced \
    --git-commit="$commit" "${bench_args[@]}"
  # A stalled part, or one the bench crashed in (a signal: the last part it named; the after_window
  # parts detach CUPTI and attach it again every round, never yet on a GPU): the bench once more
  # without it (and without its launch or transformer twin), so that the other figures still come
  # back in this lease.
  local stalled how=stalled bench_exit
  stalled=$(sed -n "s/^cuscope_gpu_bench: STALLED: 'round [0-9]*\/[0-9]*: \([a-z]*\.[a-z_]*\)'.*/\1/p" "$log" | tail -n 1)
  bench_exit=$(section_exit "gpu bench")
  if [[ -z $stalled ]] && crashed_exit "$bench_exit"; then
    stalled=$(sed -n 's/^cuscope_gpu_bench: round [0-9]*\/[0-9]*: \([a-z]*\.[a-z_]*\)$/\1/p' "$log" | tail -n 1)
    how="crashed, exit $bench_exit"
  fi
  if [[ -n $stalled ]]; then
    # What the stalled run measured before the stall (the bench writes its JSON before each part):
    # into the log, since the rerun writes gpu-bench.json anew.
    if [[ -f $results/gpu-bench.json ]]; then
      {
        echo
        echo "=== gpu bench: the $how run's partial JSON (gpu-bench.json before the rerun) ==="
        cat "$results/gpu-bench.json"
      } >>"$log"
    fi
    local twins="$stalled,launch.${stalled#*.},transformer.${stalled#*.}" keep=()
    # The alternating blocks set up the defaults and CUPTI as them again: they go with either (a stall
    # in them leaves those parts in, whose figures the goals read first).
    [[ $stalled =~ ^transformer\.(defaults|minimal_cupti_callbacks)$ ]] && twins+=",transformer.alternating"
    # A crash is blamed on the last part named, but CUPTI attached again after a finalize (the next
    # part's start) would crash in the part named after it: the detaching parts left out, and the
    # bench's own finalize between parts.
    [[ $how == crashed* ]] && twins+=",transformer.after_window,transformer.between_windows" && keep=(--keep-attached)
    run_if_built "gpu bench, without $twins ($how above)" \
      "$BUILD_DIR/bench/cuscope_gpu_bench" --json="$results/gpu-bench.json" --git-commit="$commit" \
      "${bench_args[@]}" "${keep[@]}" --skip="$twins${bench_skip:+,$bench_skip}"
  fi
  section_timeout=$usual_timeout
  local torch=0 python_api=() minimal_cupti=()
  # The PyTorch step's configurations: those issue 24's goal is read from (bare, cuscope's defaults,
  # torch.profiler, the minimal client's floor) unless TORCH_OVERHEAD_CONFIGS names others. Each
  # costs about 12 s a round on the H200 of 2026-11-27 (a fresh process: torch's import, CUDA's
  # start, warm-up, teardown; each round's line says where its seconds went); python_api (the
  # Python API, measured on 2026-11-27: 1.070x), cuscope_external and cuscope_records are left to
  # that variable, so that the whole check fits one call.
  local torch_configs=bare,cuscope,torch_profiler
  if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    torch=1
    # The Python API (cuscope.scope), for the zero-code comparison below and a python_api run, when
    # this build made the module for this python3 (it needs nanobind at configure time).
    if PYTHONPATH="$BUILD_DIR/python" python3 -c 'import cuscope' 2>/dev/null; then
      python_api=(--python-package "$PWD/$BUILD_DIR/python")
    else
      echo "torch: the cuscope Python package was not built for this python3: its runs wait" | tee -a "$log"
    fi
    # The floor of CUPTI tracing on the same step: the minimal client as an injection library.
    if [[ -f $BUILD_DIR/bench/libcuscope_minimal_cupti.so ]]; then
      minimal_cupti=(--minimal-cupti "$PWD/$BUILD_DIR/bench/libcuscope_minimal_cupti.so")
      torch_configs+=,minimal_cupti
    else
      echo "torch: the minimal CUPTI client was not built: its run waits" | tee -a "$log"
    fi
    section "PyTorch step: bare, under the minimal CUPTI client, under cuscope run, under torch.profiler" \
      python3 bench/torch_overhead.py \
      --cuscope "$BUILD_DIR/src/cli/cuscope" --out "$results/torch-overhead" --git-commit "$commit" \
      --rounds "${TORCH_OVERHEAD_ROUNDS:-3}" "${python_api[@]}" "${minimal_cupti[@]}" \
      --configs "${TORCH_OVERHEAD_CONFIGS:-$torch_configs}"
  else
    skip "PyTorch step overhead" "no PyTorch with CUDA here"
  fi

  # 2. Everything else is built in the background, with the raw probes (informational), while the
  # zero-code comparisons run: they check kernel counts and attribution, which CPU load does not
  # change (nothing timed on the host is read from them), and hide about 45 s of building.
  section_background "build: everything" cmake --build "$BUILD_DIR"
  probe_build background
  # Zero-code mode with PyTorch: a small model's ranges beside torch.profiler's
  # (tests/gpu/torch_compare.py; differences over 5% are marked EXPLAIN; through cuscope.scope too,
  # whose kernel counts must be torch's).
  if ((torch)); then
    section "zero-code: PyTorch under cuscope run vs torch.profiler" python3 tests/gpu/torch_compare.py \
      --cuscope "$BUILD_DIR/src/cli/cuscope" --out "$results/torch-compare" "${python_api[@]}"
    # Issue 15: a torch.cuda.graph captured under NVTX ranges, replayed 100 times: exact kernel
    # counts per capture-time path (fails on a miss).
    section "zero-code: torch.cuda.graph breakdown by capture-time NVTX path" python3 tests/gpu/torch_compare.py \
      --cuscope "$BUILD_DIR/src/cli/cuscope" --out "$results/torch-compare" --graph --replays 100
  else
    skip "zero-code: PyTorch" "no PyTorch with CUDA here"
  fi
  section_join

  # 3. CTest and the demos. Every test but those that need the development machine's
  # tools (label "devtools": HTA's venv, Chromium, mpirun, clang-14's libFuzzer), which the GPU
  # machine lacks and CI runs anyway, and "gpu: tests", the suite run above. The GPU tests (label
  # gpu) first, one at a time, with nothing else running: "a million launches, none dropped" lost
  # 5406 launch notes on 2026-11-27 with 15 CPU tests beside it on 16 cores; then the rest in
  # parallel, the longest first (COST, tests/CMakeLists.txt), "package: add_subdirectory" building
  # cuscope from source with 8 jobs (CMAKE_BUILD_PARALLEL_LEVEL, tests/consumer/check.sh).
  echo "ctest: left out here (label devtools): $(ctest --test-dir "$BUILD_DIR" -N -L devtools 2>/dev/null |
    sed -n 's/^ *Test *#[0-9]*: //p' | paste -sd ';' -); and 'gpu: tests' (run above)" | tee -a "$log"
  section "ctest: the GPU tests, one at a time" ctest --test-dir "$BUILD_DIR" --output-on-failure -j 1 \
    -L '^gpu$' -LE '^devtools$' -E '^gpu: tests$'
  section "ctest: the rest" env CMAKE_BUILD_PARALLEL_LEVEL=8 ctest --test-dir "$BUILD_DIR" --output-on-failure \
    -j "$(nproc)" -LE '^(devtools|gpu)$'
  section demo env CUSCOPE_TRACE="$results/demo.cuscope" "$BUILD_DIR/cuda/cuscope_demo"
  # Issue 5: the demo with the sol counters on its MLP range prints a verdict per range.
  section "demo, counters: sol on step/mlp" env CUSCOPE_METRICS=sol CUSCOPE_METRIC_RANGES=step/mlp \
    "$BUILD_DIR/cuda/cuscope_demo" --steps 5 --warmup 2
  # CUPTI taken by another tool: the table says in exactly one line why tracing is off, host
  # timing goes on, and the demo exits 0.
  if command -v compute-sanitizer >/dev/null; then
    section "demo under compute-sanitizer (CUPTI taken)" bash -c \
      "out=\$(compute-sanitizer --tool memcheck '$BUILD_DIR/cuda/cuscope_demo' --steps 3 --warmup 1 2>&1); code=\$?
       printf '%s\n' \"\$out\"
       lines=\$(grep -c '^GPU activity: off — ' <<<\"\$out\")
       echo \"gpu-check: exit \$code, \$lines line(s) saying why GPU activity is off\"
       [[ \$code == 0 && \$lines == 1 ]] && grep -Eq '^step +[0-9]+ ' <<<\"\$out\""
  else
    skip "demo under compute-sanitizer" "compute-sanitizer not found"
  fi
  section "zero-code: the demo under cuscope run" "$BUILD_DIR/src/cli/cuscope" run -- "$BUILD_DIR/cuda/cuscope_demo" \
    --steps 5 --warmup 2

  # 4. Informational, last: their failures and their skips for the budget count for nothing. The CPU
  # bench (the host path on this machine's CPU: the goals for it are measured on the development
  # machine, bench/run-cpu.sh and callgrind), the raw CUDA/CUPTI probes (where the time of a missed
  # goal goes), Nsight Compute's view of the counter test's kernels, and the trial of CUPTI-timed
  # events. Shorter than the CPU set's own default (5 repetitions of 0.1 s, under a minute).
  local cpu_bench_args
  read -ra cpu_bench_args <<<"${GPU_CHECK_CPU_BENCH_ARGS:---benchmark_repetitions=3 --benchmark_min_time=0.05}"
  if [[ -x $BUILD_DIR/bench/cuscope_bench ]]; then
    informational "cpu bench (informational)" "$BUILD_DIR/bench/cuscope_bench" --json="$results/cpu-bench.json" \
      --git-commit="$commit" "${cpu_bench_args[@]}"
  else
    skip "cpu bench (informational)" "$BUILD_DIR/bench/cuscope_bench not built"
  fi
  probe_runs
  # Nsight Compute on the counter test's kernels, for its values beside cuscope's ("cuscope
  # counters:" lines of the gpu tests above). cuscope's own counters are refused under ncu, so
  # the test itself fails there; only ncu's table matters in this section.
  if command -v ncu >/dev/null; then
    informational "ncu on the counter test's kernels (informational)" bash -c \
      "ncu --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__sass_thread_inst_executed_op_ffma_pred_on.sum \
         --kernel-name regex:'copy_kernel|fma_kernel' --launch-count 2 \
         '$BUILD_DIR/tests/gpu/cuscope_gpu_tests' '[metrics]' || true"
  else
    skip "ncu" "Nsight Compute not found"
  fi
  # A trial, not counted: the GPU tests' expectations with the events timed by CUPTI's CUDA_EVENT
  # records (CUSCOPE_EVENT_TIMESTAMPS=cupti), the candidate default for CUSCOPE_EVENTS=always and
  # sampled (docs/cupti-event-clock.md). Its failures show; they fail nothing, since `cuda` is the
  # default. Each case's name as it starts and its seconds (--durations); a case past 15 s gets
  # every thread's stack from the tests' own watchdog (GPU_TEST_STALL_S: the device has no gdb) and
  # ends the run; past 20 s run_with_stacks ends it. On 2026-11-27 it hung for 50 s in the
  # two-stream case, before its cudaStreamSynchronize(fast) returned (docs/cupti-event-clock.md):
  # that case runs apart, alone in a fresh process and then after the global-capture case (which ran
  # before it then), so that a hang there says whether it needs what an earlier case left, and the
  # other cases run whatever it does.
  if [[ -x $BUILD_DIR/tests/gpu/cuscope_gpu_tests ]]; then
    local counted_timeout=$section_timeout exe=$BUILD_DIR/tests/gpu/cuscope_gpu_tests
    local trial="events timed by CUPTI (CUSCOPE_EVENT_TIMESTAMPS=cupti; a trial, not counted)"
    section_timeout=30
    export GPU_TEST_EVENT_TIMESTAMPS=cupti GPU_TEST_STALL_S=15
    local run
    run="$(declare -f run_with_stacks); run_with_stacks \"\$@\""
    informational "gpu tests, $trial" bash -c "$run" run_with_stacks 20 "$exe" --durations yes "$GPU_TESTS_BUT_DETACH~[two_streams]"
    informational "gpu tests' two-stream case alone, $trial" bash -c "$run" run_with_stacks 20 "$exe" \
      --durations yes '[two_streams]'
    informational "gpu tests' two-stream case after the global-capture case, $trial" bash -c "$run" run_with_stacks 20 \
      "$exe" --durations yes '[global_capture],[two_streams]'
    unset GPU_TEST_EVENT_TIMESTAMPS GPU_TEST_STALL_S
    section_timeout=$counted_timeout
  fi

  # Only into the device call's $OUT: without it the results are the build folder, whose folders
  # are the build itself (packing them removed it).
  [[ -n ${OUT:-} ]] && pack_folders "$results"
  local also=""
  ((info_skipped)) && also="; $info_skipped informational skipped (not counted)"
  echo "gpu-check: $passed passed, $failed failed, $skipped skipped (budget)$also" | tee -a "$log"
  echo "log: $log"
  ((failed == 0 && skipped == 0))
}

main() {
  cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
  case "${1:-}" in
    --help | -h) usage ;;
    --fetch-deps) fetch_deps ;;
    --probes) probes_only ;;
    "") check ;;
    *)
      usage >&2
      exit 2
      ;;
  esac
}

main "$@"
