#!/bin/sh
# Run stage: a clean build with the task's Makefile, then the program's output on data/values.txt,
# on stdout. It runs the agent's Makefile and program, so it judges nothing (whatever it decided
# would be theirs to forge): a compare stage diffs its output with the hidden reference
# checks/expected_output.txt, computed independently in Python.
set -eu
make -s clean >&2
make -s stats >&2
./stats data/values.txt
