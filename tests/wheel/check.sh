#!/usr/bin/env bash
# The Python package as a stranger installs it: `pip wheel` builds cuscope's wheel from this
# repository (scikit-build-core, this repository's CMake), a fresh virtual environment installs it
# offline, and, outside the source tree, a script uses scopes and the live report, and
# `python -m cuscope run` profiles a child that uses scopes too (its engine: the wheel's
# libcuscope_inject.so). Prints what it checks; the CTest matches the lines.
#   check.sh <work-dir> <source-dir> <python>
# <python>: the interpreter with the build tools (cmake/setup.sh's .cache/py-venv: nanobind,
# scikit-build-core and a CMake >= 3.26); the fresh environment is made from it.
# Never: touch the source tree (the build goes to <work-dir>), or use the network (no build
# isolation, --no-index).
set -euo pipefail
work=$1 src=$2 python=$3
rm -rf "$work/wheel" "$work/venv" "$work/run"
mkdir -p "$work/run"
bin=$(dirname "$python")
# The build tools' CMake first on PATH: Debian 12's is 3.25, the stable-ABI build wants 3.26.
PATH="$bin:$PATH" CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
  "$python" -m pip wheel -q --disable-pip-version-check --no-build-isolation --no-deps \
  --wheel-dir "$work/wheel" --config-settings=build-dir="$work/skbuild" "$src"
wheel=$(ls "$work"/wheel/cuscope-*.whl)
echo "built: $(basename "$wheel")"
"$python" -m venv "$work/venv"
"$work/venv/bin/pip" install -q --disable-pip-version-check --no-index --no-deps "$wheel"
cd "$work/run"  # not the source tree: the import must find the installed package
cat >scopes.py <<'PY'
import sys
import cuscope

where = "site-packages" if "site-packages" in cuscope.__file__ else cuscope.__file__
print(f"imported from {where}")
cuscope.start(print_at_exit=False)
for _ in range(3):
    with cuscope.scope("outer"):
        with cuscope.scope("inner"):
            pass
r = cuscope.snapshot()
print(f"live report: outer calls {r.find('outer').calls}, outer/inner calls {r.find('outer/inner').calls}")
PY
env -u PYTHONPATH "$work/venv/bin/python" scopes.py
# Zero-code mode from the wheel: the script runs in a new process with the wheel's
# libcuscope_inject.so injected; its scopes forward to that engine, whose report goes to --json.
cat >child.py <<'PY'
import cuscope

for _ in range(2):
    with cuscope.scope("child_range"):
        pass
# Which engine took the scopes: the wheel's injection library, mapped into this process.
mapped = "site-packages/cuscope/libcuscope_inject.so" in open("/proc/self/maps").read()
with open("engine.txt", "w") as f:
    f.write("the wheel's libcuscope_inject.so\n" if mapped else "no injection library mapped\n")
PY
env -u PYTHONPATH "$work/venv/bin/python" -m cuscope run --json "$work/run/zero.json" --output "$work/run/zero.txt" \
  -- child.py
"$work/venv/bin/python" - "$work/run/zero.json" <<'PY'
import json, sys
ranges = {r["path"]: r["calls"] for r in json.load(open(sys.argv[1]))["ranges"]}
print(f"python -m cuscope run: child_range calls {ranges.get('child_range')}")
PY
echo "python -m cuscope run: engine $(cat "$work/run/engine.txt")"
