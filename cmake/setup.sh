#!/usr/bin/env bash
# Installs what cuscope needs on Debian 12 (idempotent): build tools and the -dev packages.
# CUDA 13 itself (nvcc, cudart, CUPTI, NVTX3) is expected at /usr/local/cuda.
set -euo pipefail

# clang-14 and libclang-rt-14-dev: the trace reader's fuzzer (libFuzzer); python3-venv: the HTA test
# and the Python package's; python3-dev: the Python package's native module (headers);
# chromium and fonts-dejavu-core: the flame graph's rendering test; openmpi-bin (mpirun) and
# libopenmpi-dev: the many-ranks test.
packages=(cmake ninja-build g++ libabsl-dev libspdlog-dev libfmt-dev catch2 nlohmann-json3-dev libbenchmark-dev
          clang-14 libclang-rt-14-dev python3 python3-venv python3-dev chromium fonts-dejavu-core openmpi-bin libopenmpi-dev)

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
# HolisticTraceAnalysis (PyPI) reads `cuscope trace`'s output in the tests, from its own virtual
# environment. Offline, this step says so and the setup goes on; that one test then fails saying why.
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$root/.cache/hta-venv
if ! "$venv/bin/python" -c "import hta" 2>/dev/null; then
  echo "cuscope setup: installing HolisticTraceAnalysis into $venv (for the trace test)"
  if ! { python3 -m venv "$venv" && "$venv/bin/pip" install -q --disable-pip-version-check \
           "HolisticTraceAnalysis==0.5.0"; }; then
    echo "cuscope setup: could not install HolisticTraceAnalysis from PyPI (offline?); the test" \
         "'trace: HolisticTraceAnalysis reads cuscope trace' will fail until it is installed" >&2
  fi
fi
# The Python package (python/, docs/python.md): nanobind and scikit-build-core build it, pytest and nvtx
# test it, pandas is its optional DataFrame, and CMake 3.26+ from PyPI builds its wheel the way
# `pip install .` does (tests/wheel/check.sh; Debian 12's CMake is 3.25). The build (cmake --preset
# default) uses this interpreter.
venv=$root/.cache/py-venv
if ! { "$venv/bin/python" -c "import nanobind, scikit_build_core, pytest, nvtx, pandas" &&
       "$venv/bin/cmake" --version; } >/dev/null 2>&1; then
  echo "cuscope setup: installing the Python package's build and test tools into $venv"
  if ! { python3 -m venv "$venv" && "$venv/bin/pip" install -q --disable-pip-version-check \
           "nanobind==3.1.0" "scikit-build-core==1.1.2" "pytest==9.2.0" "nvtx==0.2.17" "pandas==3.1.1" \
           "cmake==3.31.6"; }; then
    echo "cuscope setup: could not install nanobind, scikit-build-core, pytest, nvtx, pandas and CMake from" \
         "PyPI (offline?); the Python package is not built and its tests fail until they are installed" >&2
  fi
fi
echo "cuscope setup: ready"
