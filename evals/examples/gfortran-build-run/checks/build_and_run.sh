#!/bin/sh
# Check: a clean build with the task's Makefile, then the program's output on data/values.txt must
# equal the reference output (checks/expected_output.txt, computed independently in Python).
set -eu
out="$(mktemp "${TMPDIR:-/tmp}/stats_out.XXXXXX")"
trap 'rm -f "$out"' EXIT
make -s clean >/dev/null
make -s stats
./stats data/values.txt >"$out"
diff -u checks/expected_output.txt "$out"
