#!/usr/bin/env bash
# HolisticTraceAnalysis, a real consumer of Kineto-format traces, reads `cuscope trace`'s output of
# a known synthetic run and finds its kernels. HTA is installed by cmake/setup.sh into a virtual
# environment (.cache/hta-venv); CUSCOPE_HTA_PYTHON names another Python that has it.
#
# usage: check_hta.sh CUSCOPE TRACE_PROGRAM WORK_DIR
set -uo pipefail
cli=$1 program=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
source_dir=${CUSCOPE_SOURCE_DIR:-$(cd "$here/../.." && pwd)}
python=${CUSCOPE_HTA_PYTHON:-$source_dir/.cache/hta-venv/bin/python}
if ! "$python" -c "import hta" 2>/dev/null; then
  echo "FAIL: HolisticTraceAnalysis is not installed for $python: run cmake/setup.sh (it installs it from PyPI" \
       "into .cache/hta-venv, which needs network access), or set CUSCOPE_HTA_PYTHON"
  exit 1
fi
rm -rf "$work" && mkdir -p "$work/kineto" && cd "$work" || exit 1
"$program" run.cuscope live.json table.txt launched.json || { echo "FAIL: the trace program failed"; exit 1; }
"$cli" trace run.cuscope -o kineto/rank0.json || { echo "FAIL: cuscope trace failed"; exit 1; }
"$python" "$here/check_hta.py" kineto launched.json 2>hta.log || { cat hta.log; exit 1; }
