#!/usr/bin/env bash
# tests/gpu-deps-check.sh: on the Debian development machine, before a GPU lease, builds everything
# and runs CTest as tests/gpu-check.sh does on the GPU machine, with the Debian -dev packages hidden:
# that machine has none, and takes them from .gpu-deps/ (tests/gpu-check.sh --fetch-deps). A build
# that reaches /usr/include or /usr/lib for one of them fails here, not in the lease (on 2026-11-27 a
# target that needed Abseil's headers without naming Abseil failed the GPU machine's full build).
#
# How: in a mount namespace of its own (unshare -m, so root), every package of gpu-check.sh's DEPS
# list is hidden: its folders under /usr/include and the CMake package folders as empty tmpfs
# mounts, its other files (libraries, pkg-config files) as /dev/null. The rest of the machine stays:
# what the GPU machine lacks besides those packages (clang, valgrind, ...) is not simulated, and the
# GPU sections do not run (no GPU here; CTest's GPU tests report Skipped).
#
# Never: change the machine outside the namespace, or run without root (it says so and exits 2).
#   tests/gpu-deps-check.sh [BUILD_DIR]     (default build/gpu-deps-check; log BUILD_DIR/gpu-deps-check.log)
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-build/gpu-deps-check}

# Not a CUSCOPE_ name: cuscope warns of those it does not know, and tests count its warnings.
if [[ ${GPU_DEPS_CHECK_INNER:-} != 1 ]]; then
  if [[ $(id -u) != 0 ]]; then
    echo "gpu-deps-check: needs root for its own mount namespace (unshare -m)" >&2
    exit 2
  fi
  cd "$root" || exit 2
  if [[ ! -d .gpu-deps ]]; then
    tests/gpu-check.sh --fetch-deps || exit 2
  fi
  mkdir -p "$build" || exit 2
  GPU_DEPS_CHECK_INNER=1 exec unshare -m "$0" "$build"
fi

# Inside the namespace from here on.
cd "$root" || exit 2
log="$build/gpu-deps-check.log"
: >"$log"
say() { echo "$*" | tee -a "$log"; }

# gpu-check.sh's one list of the packages the GPU machine gets from .gpu-deps.
eval "$(sed -n '/^readonly DEPS=(/,/)/p' tests/gpu-check.sh)"
mount --make-rprivate / || exit 2
shared_roots=" /usr/include /usr/lib/x86_64-linux-gnu/cmake /usr/lib/cmake /usr/share/cmake "
hidden=()  # the folders made empty; dpkg -L lists a folder before what it holds
under_hidden() {
  local folder
  for folder in "${hidden[@]}"; do [[ $1 == "$folder"/* ]] && return 0; done
  return 1
}
files=0
for pkg in "${DEPS[@]}"; do
  while read -r path; do
    [[ $path == /usr/share/doc* || $path == /. ]] && continue
    under_hidden "$path" && continue
    if [[ -d $path && ! -L $path && $shared_roots == *" $(dirname "$path") "* ]]; then
      mount -t tmpfs none "$path" && hidden+=("$path")
    elif [[ -f $path && ! -L $path ]]; then
      mount --bind /dev/null "$path" && files=$((files + 1))
    fi
  done < <(dpkg -L "$pkg" 2>/dev/null)
done
folders=${#hidden[@]}
say "hidden: ${#DEPS[@]} packages ($folders folders, $files files): ${DEPS[*]}"

export CMAKE_PREFIX_PATH="$PWD/.gpu-deps/usr"
export LD_LIBRARY_PATH="$PWD/.gpu-deps/usr/lib/x86_64-linux-gnu"
export PYTHONPATH="$PWD/.gpu-deps/python"
[[ -x /usr/local/cuda/bin/nvcc ]] && export PATH="/usr/local/cuda/bin:$PATH"
jobs=$(nproc)

status=0
step() {
  local name=$1 start=$SECONDS
  shift
  "$@" >>"$log" 2>&1
  local rc=$?
  say "=== $name (exit $rc, $((SECONDS - start)) s) ==="
  ((rc == 0)) || status=1
}
step configure cmake --preset gpu -B "$build" "-DCMAKE_CUDA_ARCHITECTURES=${CUDAARCHS:-90}"
step "build: everything" cmake --build "$build" -j "$jobs"
# As gpu-check.sh's two ctest sections together (there the GPU tests run alone first; here they
# skip): all tests but label devtools, and not the GPU tests' Catch run.
step ctest ctest --test-dir "$build" --output-on-failure -j "$jobs" -LE devtools -E '^gpu: tests$'
grep -E "tests passed|tests failed" "$log" | tail -1
say "gpu-deps-check: $([[ $status == 0 ]] && echo passed || echo FAILED); log: $log"
exit "$status"
