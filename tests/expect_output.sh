#!/usr/bin/env bash
# usage: tests/expect_output.sh -e REGEX [-e REGEX]... COMMAND [ARGS...]
# Runs COMMAND and passes only when it exits 0 and, for each REGEX (extended), some line of its
# output (stdout and stderr together) matches. Exit 77 passes through (CTest: Skipped).
# CTest's PASS_REGULAR_EXPRESSION alone ignores the exit code; this does not.
set -u
regexes=()
while [[ ${1:-} == -e ]]; do
  regexes+=("$2")
  shift 2
done
if (($# == 0)); then
  echo "usage: expect_output.sh -e REGEX [-e REGEX]... COMMAND [ARGS...]" >&2
  exit 2
fi
out=$("$@" 2>&1)
code=$?
printf '%s\n' "$out"
if ((code == 77)); then exit 77; fi
if ((code != 0)); then
  echo "expect_output: '$*' exited $code" >&2
  exit 1
fi
for regex in "${regexes[@]}"; do
  if ! grep -Eq -- "$regex" <<<"$out"; then
    echo "expect_output: no line of the output of '$*' matches: $regex" >&2
    exit 1
  fi
done
exit 0
