#!/usr/bin/env bash
# Installs what cuscope needs on Debian 12 (idempotent): build tools and the -dev packages.
# CUDA 13 itself (nvcc, cudart, CUPTI, NVTX3) is expected at /usr/local/cuda.
set -euo pipefail

packages=(cmake ninja-build g++ libabsl-dev libspdlog-dev libfmt-dev catch2 nlohmann-json3-dev libbenchmark-dev)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  echo "cuscope setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [[ ! -x /usr/local/cuda/bin/nvcc ]]; then
  echo "cuscope setup: CUDA not found at /usr/local/cuda (nvcc, cudart, CUPTI and NVTX3 are needed)" >&2
  exit 1
fi
echo "cuscope setup: ready"
