#!/usr/bin/env bash
# Builds and runs tests/consumer against cuscope, as another project would.
#   check.sh find_package <work-dir> <cuscope-build-dir> <cuda-compiler> <cuda-archs>
#   check.sh add_subdirectory <work-dir> <cuscope-source-dir> <cuda-compiler> <cuda-archs>
set -euo pipefail
mode=$1 work=$2 cuscope=$3 nvcc=$4 archs=$5
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work"
common=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES="$archs")
if [[ $mode == find_package ]]; then
  cmake --install "$cuscope" --prefix "$work/prefix" >/dev/null
  cmake -S "$here" -B "$work/build" "${common[@]}" -DCMAKE_PREFIX_PATH="$work/prefix;${CMAKE_PREFIX_PATH:-}" >/dev/null
else
  cmake -S "$here" -B "$work/build" "${common[@]}" -DCUSCOPE_SOURCE_DIR="$cuscope" >/dev/null
fi
# 2 jobs unless CMAKE_BUILD_PARALLEL_LEVEL says (tests/gpu-check.sh: 8 on its 16 cores).
cmake --build "$work/build" -j"${CMAKE_BUILD_PARALLEL_LEVEL:-2}" >/dev/null
CUSCOPE_PRINT=0 "$work/build/consumer"
if [[ $mode == find_package ]]; then
  # Zero-code mode from the install: bin/cuscope finds lib*/libcuscope_inject.so next to it.
  "$work/prefix/bin/cuscope" run --output "$work/table.txt" -- "$work/build/nvtx_only"
  sed -En 's/^(nvtx_only_range) +([0-9]+) .*/installed cuscope run: \1 calls \2/p' "$work/table.txt"
  # Left on (--sample-ms): a run shorter than the whole start is recorded whole.
  "$work/prefix/bin/cuscope" run --sample-ms 100000 --output "$work/sampled.txt" -- "$work/build/nvtx_only"
  sed -En 's/^(nvtx_only_range) +([0-9]+) .*/installed cuscope run --sample-ms: \1 calls \2/p' "$work/sampled.txt"
fi
