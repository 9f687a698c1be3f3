#!/usr/bin/env bash
# docs/validation/probes/build.sh: builds probes of this folder with nvcc alone (no CMake, no
# cuscope), side by side, against the CUDA toolkit's CUPTI; prints each nvcc command line and its
# output, in the order given. Used by tests/gpu-check.sh; by hand:
#   docs/validation/probes/build.sh OUT_DIR NAME...    (NAME: a probe's file name without .cu)
# CUDAARCHS picks the architecture (its first entry; default 90). Exits 1 if any probe did not build.
set -uo pipefail

if (($# < 2)); then
  echo "usage: $0 OUT_DIR NAME..." >&2
  exit 2
fi
out=$1
shift
here=$(dirname "${BASH_SOURCE[0]}")
cuda=${CUDA_HOME:-/usr/local/cuda}
nvcc=nvcc
command -v nvcc >/dev/null || nvcc=$cuda/bin/nvcc
arch=${CUDAARCHS:-90}
arch=${arch%%[;, ]*}
flags=(-O2 -std=c++20 "-arch=sm_$arch")
for dir in "$cuda/extras/CUPTI/include" "$cuda/include"; do
  [[ -d $dir ]] && flags+=("-I$dir")
done
for dir in "$cuda/extras/CUPTI/lib64" "$cuda/lib64"; do
  [[ -d $dir ]] && flags+=("-L$dir" "-Xlinker" "-rpath=$dir")
done
mkdir -p "$out" || exit 1

for name in "$@"; do
  rm -f "$out/$name"
  cmd=("$nvcc" "${flags[@]}" -o "$out/$name" "$here/$name.cu" -lcupti -ldl)
  {
    echo "${cmd[*]}"
    "${cmd[@]}"
    echo "$name: nvcc exit $?"
  } >"$out/$name.build.log" 2>&1 &
done
wait

status=0
for name in "$@"; do
  cat "$out/$name.build.log"
  [[ -x $out/$name ]] || status=1
done
exit "$status"
