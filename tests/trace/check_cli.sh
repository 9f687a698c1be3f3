#!/usr/bin/env bash
# The `cuscope` command on real trace files: a known synthetic GPU run (cuscope_trace_program) and,
# when given, the demo. Exits non-zero at the first check that fails, saying which.
#
# usage: check_cli.sh CUSCOPE TRACE_PROGRAM WORK_DIR [DEMO]
set -uo pipefail
cli=$1 program=$2 work=$3 demo=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1

fail() { echo "FAIL: $*"; exit 1; }
# A bad input: exit status 1, exactly one line on stderr, naming the command; no output file left.
bad_input() {
  local what=$1; shift
  "$@" >out.txt 2>err.txt
  local rc=$?
  [[ $rc -eq 1 ]] || fail "$what: exit status $rc, expected 1 ($(cat err.txt))"
  [[ $(wc -l <err.txt) -eq 1 ]] || fail "$what: stderr is not one line: $(cat err.txt)"
  grep -q "^cuscope $2: " err.txt || fail "$what: stderr does not name the command: $(cat err.txt)"
  [[ ! -e bad.json ]] || fail "$what: left a partial bad.json behind"
  echo "ok: $what -> $(cat err.txt)"
}

"$program" run.cuscope live.json table.txt launched.json || fail "the trace program failed"
"$cli" json run.cuscope >replayed.json || fail "cuscope json failed"
cmp -s live.json replayed.json || fail "cuscope json differs from the session's CUSCOPE_JSON: $(diff live.json replayed.json | head)"
echo "ok: cuscope json equals the session's JSON report"
"$cli" show run.cuscope >shown.txt || fail "cuscope show (trace) failed"
cmp -s table.txt shown.txt || fail "cuscope show differs from the exit table: $(diff table.txt shown.txt | head)"
"$cli" show live.json >shown_json.txt || fail "cuscope show (JSON report) failed"
cmp -s table.txt shown_json.txt || fail "cuscope show of the JSON report differs: $(diff table.txt shown_json.txt | head)"
echo "ok: cuscope show prints the exit table, from the trace and from the JSON report"
"$cli" show --sort name --rows 1 --top-kernels 0 run.cuscope >sorted.txt || fail "cuscope show with options failed"
grep -q "1 more range" sorted.txt || fail "--rows 1 did not cut the table: $(cat sorted.txt)"
grep -q "gemm_kernel" sorted.txt && fail "--top-kernels 0 still lists kernels"
"$cli" show --sort bogus run.cuscope 2>err.txt && fail "a bad --sort was accepted"
grep -q "^cuscope show: --sort='bogus' is not a sort key" err.txt || fail "bad --sort message: $(cat err.txt)"
echo "ok: show's table options"
"$cli" trace run.cuscope -o run.json || fail "cuscope trace failed"
# diff reads traces as it reads JSON reports: a run against itself, or against its own JSON report.
"$cli" diff --metric all run.cuscope run.cuscope >diff.txt || fail "cuscope diff of a trace with itself: $(cat diff.txt)"
"$cli" diff --metric all run.cuscope live.json >diff.txt || fail "cuscope diff of a trace with its JSON: $(cat diff.txt)"
grep -q "^result: no regression$" diff.txt || fail "cuscope diff of two traces: $(cat diff.txt)"
echo "ok: cuscope diff of two traces, and of a trace and a JSON report"
python3 "$here/check_kineto.py" run.json live.json || fail "the Kineto trace's shape"
for c in show json trace diff flame merge; do
  "$cli" $c --help | grep -q "^usage: cuscope $c" || fail "cuscope $c --help"
done
echo "ok: --help of each command"
# Every command reads its command line the same way: one line saying what is wrong, then the usage;
# exit 2 (run: 125, so that it cannot be mistaken for its command's status).
bad_line() {
  local status=$1 expected=$2; shift 2
  "$cli" "$@" >out.txt 2>err.txt
  local rc=$?
  [[ $rc -eq $status ]] || fail "cuscope $*: exit status $rc, expected $status"
  [[ "$(head -1 err.txt)" == "$expected" ]] || fail "cuscope $*: said '$(head -1 err.txt)', expected '$expected'"
  [[ "$(sed -n 3p err.txt)" == "usage: cuscope $1"* ]] || fail "cuscope $*: no usage after the error: $(cat err.txt)"
  [[ ! -s out.txt ]] || fail "cuscope $*: wrote to stdout: $(cat out.txt)"
}
for c in show json trace diff flame merge run; do
  status=2; [[ $c == run ]] && status=125
  bad_line $status "cuscope $c: '--bogus' is not an option of $c" $c --bogus run.cuscope
done
for c in "show --rows" "json -o" "trace -o" "diff --threshold" "flame --metric" "merge --straggler"; do
  bad_line 2 "cuscope ${c%% *}: ${c#* } needs a value" ${c%% *} run.cuscope ${c#* }
done
bad_line 125 "cuscope run: --json needs a value" run --json
bad_line 2 "cuscope show: no file given" show --rows 3
bad_line 2 "cuscope json: one file at a time ('a.cuscope' and 'b.cuscope')" json a.cuscope b.cuscope
bad_line 2 "cuscope trace: -o OUT is required" trace run.cuscope
bad_line 2 "cuscope diff: it compares two reports: BASE and NEW" diff run.cuscope
bad_line 2 "cuscope merge: it merges one report or more" merge -o m.json
bad_line 125 "cuscope run: no command to run" run --
echo "ok: bad command lines: one line saying what is wrong, then the usage, for every command"

head -c -5 run.cuscope >cut.cuscope
printf 'CUSCOPE-TRACE\n\0\0\2\0\0\0\30\0\0\0' >v2.cuscope
bad_input "a missing file" "$cli" json missing.cuscope
bad_input "not a trace" "$cli" json live.json
bad_input "a truncated trace" "$cli" json cut.cuscope
bad_input "another format version" "$cli" json v2.cuscope
bad_input "a truncated trace (trace)" "$cli" trace cut.cuscope -o bad.json
bad_input "neither trace nor JSON report (show)" "$cli" show launched.json
bad_input "a truncated trace (flame)" "$cli" flame cut.cuscope -o bad.svg
[[ ! -e bad.svg ]] || fail "flame of a truncated trace left bad.svg behind"
bad_input "a truncated trace (merge)" "$cli" merge cut.cuscope
# OUT as it was until the new one is whole: a failed read leaves a file, a link and the file it names
# as they were (trace once removed OUT, whatever it was), and a conversion over its own input works.
echo precious >kept.json && ln -sf kept.json link.json
bad_input "a truncated trace over an existing file (trace)" "$cli" trace cut.cuscope -o kept.json
[[ $(cat kept.json) == precious ]] || fail "a failed trace -o emptied or removed the file it named"
bad_input "a truncated trace over a link (trace)" "$cli" trace cut.cuscope -o link.json
[[ -L link.json && $(cat kept.json) == precious ]] || fail "a failed trace -o removed the link or emptied its file"
"$cli" trace run.cuscope -o link.json || fail "trace -o over a link failed"
[[ -L link.json ]] && python3 -c 'import json,sys; json.load(open("kept.json"))' ||
  fail "trace -o over a link replaced the link, or wrote no JSON into the file it names"
ls ./*cuscope-tmp* >/dev/null 2>&1 && fail "a temporary output file was left behind: $(ls ./*cuscope-tmp*)"
cp run.cuscope self.cuscope && "$cli" trace self.cuscope -o self.cuscope && python3 -c 'import json; json.load(open("self.cuscope"))' ||
  fail "trace -o over its own input"
# What standard output did not take is a failure, never a success: a full disk, here /dev/full.
if [[ -w /dev/full ]]; then
  "$cli" show run.cuscope >/dev/full 2>err.txt
  rc=$?
  [[ $rc -eq 1 ]] && grep -q "^cuscope show: cannot write to standard output: " err.txt ||
    fail "show to a full disk: exit status $rc, stderr $(cat err.txt)"
  "$cli" diff run.cuscope run.cuscope >/dev/full 2>err.txt
  rc=$?
  [[ $rc -eq 2 && $(wc -l <err.txt) -eq 1 ]] || fail "diff to a full disk: exit status $rc (expected 2), stderr $(cat err.txt)"
  bad_input "json -o to a full disk" "$cli" json run.cuscope -o /dev/full
  grep -q "^cuscope json: cannot write '/dev/full': " err.txt || fail "json -o /dev/full: $(cat err.txt)"
  [[ -c /dev/full ]] || fail "json -o /dev/full removed the device"
  echo "ok: what standard output or a device did not take fails the command"
fi
# Not a report at all, of any length: refused at its first bytes, not read whole (/dev/zero).
timeout 20 "$cli" show /dev/zero >out.txt 2>err.txt
rc=$?
[[ $rc -eq 1 ]] && grep -q "^cuscope show: /dev/zero: not a cuscope trace or JSON report$" err.txt ||
  fail "show /dev/zero: exit status $rc, stderr $(cat err.txt)"
"$cli" diff run.cuscope cut.cuscope >out.txt 2>err.txt
rc=$?
[[ $rc -eq 2 && $(wc -l <err.txt) -eq 1 ]] && grep -q "^cuscope diff: cut.cuscope: truncated: " err.txt ||
  fail "diff of a truncated trace: exit status $rc (expected 2), stderr $(cat err.txt)"
# --partial: the same cut trace read up to its last whole record, one line on stderr saying where.
said_cut() {
  [[ $(wc -l <err.txt) -eq 1 ]] && grep -q "^cuscope $1: cut.cuscope: truncated: .*; read up to there (--partial)$" err.txt ||
    fail "$1 --partial: stderr $(cat err.txt)"
}
"$cli" show --partial cut.cuscope >partial.txt 2>err.txt || fail "show --partial of a cut trace: $(cat err.txt)"
said_cut show
grep -q "this trace was cut short" partial.txt || fail "show --partial: no note in the table: $(head partial.txt)"
grep -q "forward" partial.txt || fail "show --partial: the ranges are missing: $(cat partial.txt)"
"$cli" json --partial cut.cuscope >partial.json 2>err.txt || fail "json --partial of a cut trace: $(cat err.txt)"
said_cut json
python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); sys.exit(0 if any("cut short" in n for n in r["notes"]) else 1)' \
  partial.json || fail "json --partial: no note saying the trace was cut"
"$cli" trace --partial cut.cuscope -o partial_trace.json 2>err.txt || fail "trace --partial of a cut trace: $(cat err.txt)"
said_cut trace
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' partial_trace.json || fail "trace --partial: not JSON"
# The cut took only the end record: the ranges are the whole trace's.
"$cli" diff --partial --metric all run.cuscope cut.cuscope >partial_diff.txt 2>err.txt ||
  fail "diff --partial of a cut trace: $(cat err.txt) $(cat partial_diff.txt)"
said_cut diff
grep -q "^result: no regression$" partial_diff.txt || fail "diff --partial: $(cat partial_diff.txt)"
"$cli" flame --partial cut.cuscope -o partial.svg 2>err.txt || fail "flame --partial of a cut trace: $(cat err.txt)"
said_cut flame
grep -q "forward" partial.svg || fail "flame --partial: no forward box: $(head -c 300 partial.svg)"
"$cli" merge --partial cut.cuscope >partial_merge.txt 2>err.txt || fail "merge --partial of a cut trace: $(cat err.txt)"
said_cut merge
grep -q "forward" partial_merge.txt || fail "merge --partial: the ranges are missing: $(cat partial_merge.txt)"
echo "ok: --partial reads a cut trace (show, json, trace, diff, flame, merge), saying where it was cut"
for seed in "$here"/corpus/*; do
  "$cli" json "$seed" >/dev/null 2>err.txt
  rc=$?
  [[ $rc -le 1 && $(wc -l <err.txt) -le 1 ]] || fail "corpus $(basename "$seed"): json exit $rc: $(cat err.txt)"
  "$cli" trace "$seed" -o corpus.json >/dev/null 2>err.txt
  rc=$?
  [[ $rc -le 1 && $(wc -l <err.txt) -le 2 ]] || fail "corpus $(basename "$seed"): trace exit $rc: $(cat err.txt)"
  if [[ $rc -eq 0 ]]; then
    python3 -c 'import json, sys; json.load(open(sys.argv[1], encoding="utf-8"))' corpus.json ||
      fail "corpus $(basename "$seed"): cuscope trace wrote JSON that does not parse"
  fi
done
echo "ok: every fuzz corpus file gives a report or one line"

# A trace that records its rank (written by make_seeds.py, not by the C++ writer): the replayed
# report and the Kineto trace both carry it.
"$cli" json "$here/corpus/all_records.cuscope" >ranked.json || fail "cuscope json of the ranked seed"
"$cli" trace "$here/corpus/all_records.cuscope" -o ranked_trace.json || fail "cuscope trace of the ranked seed"
python3 - ranked.json ranked_trace.json <<'PY' || fail "the ranked seed's rank did not come through"
import json, sys
report, kineto = (json.load(open(p, encoding="utf-8")) for p in sys.argv[1:])
assert (report["rank"], report["world_size"]) == (3, 4), (report["rank"], report["world_size"])
assert kineto["distributedInfo"] == {"rank": 3, "world_size": 4}, kineto["distributedInfo"]
step = next(r for r in report["ranges"] if r["path"] == "step")
assert (step["self"]["pageable_copies"], step["self"]["pageable_bytes"]) == (1, 4096), step["self"]
PY
echo "ok: a trace's rank reaches its report and its Kineto trace; its copies' memory kinds, the report"

if [[ -n $demo ]]; then
  CUSCOPE_TRACE=demo.cuscope CUSCOPE_OUTPUT=demo_table.txt CUSCOPE_JSON=demo.json "$demo" >/dev/null 2>&1 ||
    fail "the demo failed"
  "$cli" show demo.cuscope >demo_shown.txt || fail "cuscope show of the demo's trace failed"
  # The exit table exactly, with a GPU its line of cuscope's own work too (the trace's summary
  # carries the CUPTI buffers the live session processed, and the time it took).
  cmp -s demo_table.txt demo_shown.txt || fail "the demo's table differs: $(diff demo_table.txt demo_shown.txt | head)"
  "$cli" trace demo.cuscope -o demo_trace.json || fail "cuscope trace of the demo failed"
  python3 "$here/check_kineto.py" demo_trace.json demo.json || fail "the demo's Kineto trace"
  echo "ok: the demo's trace shows its exit table, one complete event per scope instance"
fi
echo "all trace CLI checks passed"
