#!/usr/bin/env bash
# `cuscope json` and `cuscope trace` read a trace in bounded memory: on a trace three times larger
# (69 MB against 23 MB, both past the converter's window of 65,536 waiting API calls), their peak
# resident memory grows by less than 2 MiB.
#
# usage: check_bounded.sh CUSCOPE WORK_DIR
set -uo pipefail
cli=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
python3 "$here/make_big_trace.py" small.cuscope 1000 && python3 "$here/make_big_trace.py" large.cuscope 3000 ||
  { echo "FAIL: could not write the traces"; exit 1; }
peak_kib() {  # peak resident memory of a command, in KiB (getrusage of the finished child)
  python3 -c 'import resource, subprocess, sys
rc = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if rc == 0 else -1)' "$@"
}
status=0
for command in json trace; do
  args=("$cli" "$command")
  [[ $command == trace ]] && extra=(-o /dev/null) || extra=()
  small=$(peak_kib "${args[@]}" small.cuscope "${extra[@]}")
  large=$(peak_kib "${args[@]}" large.cuscope "${extra[@]}")
  if [[ $small == -1 || $large == -1 ]]; then
    echo "FAIL: cuscope $command failed"
    status=1
  elif [[ ! $small =~ ^[1-9][0-9]*$ || ! $large =~ ^[1-9][0-9]*$ ]]; then
    echo "FAIL: cuscope $command: the memory probe gave no peak ('$small', '$large')"
    status=1
  elif ((large - small >= 2048)); then
    echo "FAIL: cuscope $command: peak RSS $small KiB on 23 MB, $large KiB on 69 MB"
    status=1
  else
    echo "ok: cuscope $command: peak RSS $small KiB on 23 MB, $large KiB on 69 MB"
  fi
done
rm -f small.cuscope large.cuscope
exit $status
