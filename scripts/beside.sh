#!/usr/bin/env bash
# Usage: scripts/beside.sh 'BESIDE' MAIN [ARG...]
#
# Runs the shell command line BESIDE in the background, at a lower priority (nice 10), while MAIN
# runs in the foreground; fails when either fails (MAIN's exit status first, else BESIDE's).
# BESIDE's output is held and printed whole, under a header, when it ends: never mixed line by
# line into MAIN's.
#
# Why (issue 66 item 7): `make test` ran mypy (~21 CPU s, one core) before pytest, and .ci/run ran
# `make tfcheck` (~150 CPU s) after it: each a phase the CI waited for, though the suite leaves
# part of the two cores idle (it waits on its subprocesses, local AWS and browser). Beside it, at
# a lower priority, they take the idle share first and slow the suite's own work less.
set -u
[ $# -ge 2 ] || { echo "usage: $0 'BESIDE' MAIN [ARG...]" >&2; exit 2; }
beside=$1
shift
held=$(mktemp)
trap 'rm -f "$held"' EXIT
(
  nice -n 10 bash -c "$beside" >"$held" 2>&1
  rc=$?
  echo "== $beside (run beside $1): exit status $rc"
  cat "$held"
  exit $rc
) &
pid=$!
"$@"
main=$?
wait "$pid"
side=$?
[ "$main" -ne 0 ] && exit "$main"
exit "$side"
