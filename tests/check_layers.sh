#!/usr/bin/env bash
# usage: tests/check_layers.sh [SRC_DIR]   (default: the src/ beside this script)
# The pipeline's arrows, read off the #include lines: a producer is handed what it needs and never
# includes the session ("session/..."); the model includes nothing above it (producers, session,
# views, trace, cli, inject). Prints every include that runs the wrong way and exits 1 if there is
# one; exits 0 when there is none. Never edits anything.
set -u
src=${1:-"$(dirname "${BASH_SOURCE[0]}")/../src"}
if [[ ! -d $src/producers || ! -d $src/model ]]; then
  echo "check_layers.sh: no producers/ and model/ under '$src'" >&2
  exit 2
fi

bad=0
# check DIR REGEX WHAT: every #include "..." or <...> in a file under DIR whose path starts with
# REGEX and a slash is an error.
check() {
  local hits
  hits=$(grep -rnE --include='*.cpp' --include='*.hpp' --include='*.h' --include='*.cu' --include='*.cuh' \
    "^[[:space:]]*#[[:space:]]*include[[:space:]]*[\"<]($2)/" "$src/$1")
  if [[ -n $hits ]]; then
    echo "$3:"
    printf '%s\n' "$hits"
    bad=1
  fi
}
check producers 'session' "a producer includes the session"
check model 'producers|session|views|trace|cli|inject' "the model includes a layer above it"
if ((bad)); then exit 1; fi
echo "check_layers.sh: producers include no session header; the model includes nothing above it"
