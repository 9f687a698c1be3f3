#!/usr/bin/env bash
# Builds and runs every test: the full suite (CPU tests, at-exit and packaging tests; GPU tests
# report Skipped without a GPU), then the CPU suite under ASan+UBSan, then the threaded tests
# under TSan. Stops at the first failing stage; the exit code says whether all passed.
set -euo pipefail
cd "$(dirname "$0")/.."

stage() {
  echo
  echo "=== cuscope tests: $1 ==="
}

stage "full suite (RelWithDebInfo)"
cmake --preset default >/dev/null
cmake --build --preset default
ctest --preset default

stage "CPU suite under AddressSanitizer + UndefinedBehaviorSanitizer"
cmake --preset asan >/dev/null
cmake --build --preset asan
ctest --preset asan

stage "threaded, fork and lifetime tests under ThreadSanitizer"
cmake --preset tsan >/dev/null
cmake --build --preset tsan
ctest --preset tsan

echo
echo "cuscope tests: all stages passed"
