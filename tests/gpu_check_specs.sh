#!/usr/bin/env bash
# usage: tests/gpu_check_specs.sh GPU_TESTS_BINARY
# What tests/gpu-check.sh selects of the GPU tests, checked without a GPU (the binary lists its cases
# without one): its run of every case but the detach one (GPU_TESTS_BUT_DETACH) holds exactly the
# cases a run without a spec holds, less those tagged [detach]: none hidden ([.slow]: its own CTest
# test; [.multi-gpu]: fails on one GPU), none left out besides. Its detach sections' spec ([detach])
# holds the five detach cases (after the last window, between windows, between windows the clock
# ends, while recording is off, a sample). And section_exit (gpu-check-sections.sh) reads the exit code of the section named
# exactly so, its last one; hung_exit and crashed_exit tell a hang's and a crash's exit codes. Prints what differs and exits 1; exits 0 when nothing does. Never runs
# a test case.
set -u
bin=${1:?usage: tests/gpu_check_specs.sh GPU_TESTS_BINARY}
here=$(dirname "${BASH_SOURCE[0]}")
bad=0
fail() {
  echo "FAIL: $*"
  bad=1
}

names() { "$bin" --list-test-names-only "$@" | sed '/^$/d' | sort; }

spec=$(sed -n "s/^readonly GPU_TESTS_BUT_DETACH='\(.*\)'$/\1/p" "$here/gpu-check.sh")
[[ -n $spec ]] || fail "no readonly GPU_TESTS_BUT_DETACH='...' in gpu-check.sh"
detach_spec=$(sed -n "s/.*run_with_stacks [0-9]* \"\$exe\" '\(.*\)'$/\1/p" "$here/gpu-check-sections.sh")
[[ -n $detach_spec ]] || fail "no detach spec in gpu-check-sections.sh's gpu_detach_test"

all=$(names) || fail "$bin --list-test-names-only failed"
hidden=$(names '[.]')
detach=$(names "$detach_spec")
selected=$(names "$spec")
[[ -n $hidden ]] || fail "no hidden case to check the spec against (none tagged [.])"
[[ $(grep -c . <<<"$detach") == 5 ]] ||
  fail "'$detach_spec' selects $(grep -c . <<<"$detach") cases, not 5 (after the last window, between windows, between the clock's windows, while recording is off, a sample): $detach"
expected=$(comm -23 <(echo "$all") <(echo "$detach"))
if [[ $selected != "$expected" ]]; then
  fail "'$spec' selects other cases than every case but the detach one:"
  diff <(echo "$expected") <(echo "$selected") | sed -n 's/^[<>]/  &/p'
fi
while IFS= read -r name; do
  [[ -n $name ]] && grep -qxF -- "$name" <<<"$selected" && fail "'$spec' selects the hidden case '$name'"
done <<<"$hidden"

# section_exit, on a log of sections whose names begin alike.
# shellcheck source-path=SCRIPTDIR source=gpu-check-sections.sh
source "$here/gpu-check-sections.sh"  # sets log="": the file after it
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cat >"$log" <<'LOG'
=== gpu test: detached (exit 139, 2 s) ===
=== gpu test: detached, external correlation (exit 0, 3 s) ===
=== gpu test: detached (exit 124, 33 s) ===
LOG
[[ $(section_exit "gpu test: detached") == 124 ]] || fail "section_exit: '$(section_exit "gpu test: detached")', not 124"
[[ $(section_exit "gpu test: detached, external correlation") == 0 ]] || fail "section_exit of the second section"
[[ -z $(section_exit "gpu test") ]] || fail "section_exit of a name that is only a prefix: '$(section_exit "gpu test")'"
# hung_exit: the exit codes of a hang (run_with_stacks 124, the section's kill 137, the tests'
# watchdog 3) and no other.
for code in 124 137 3; do hung_exit "$code" || fail "hung_exit $code: not a hang"; done
for code in 0 1 2 134 139 ""; do hung_exit "$code" && fail "hung_exit '$code': a hang"; done
# crashed_exit: a crash's signals (SIGABRT, SIGBUS, SIGFPE, SIGSEGV) and no other exit.
for code in 134 135 136 139; do crashed_exit "$code" || fail "crashed_exit $code: not a crash"; done
for code in 0 1 3 124 137 1390 ""; do crashed_exit "$code" && fail "crashed_exit '$code': a crash"; done

((bad == 0)) && echo "gpu_check_specs.sh: '$spec' selects $(grep -c . <<<"$selected") cases, '$detach_spec' 2; section_exit, hung_exit and crashed_exit right"
exit "$bad"
