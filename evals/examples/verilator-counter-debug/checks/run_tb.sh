#!/bin/sh
# Run stage: build rtl/counter.v with the stimulus driver (checks/tb_counter.cpp) and write the
# design's cycle-by-cycle trace to the file named by $1. It runs the agent's design, so it judges
# nothing: checks/compare_trace.py does, in a compare stage. Builds outside the task folder.
set -eu
trace="${1:?usage: run_tb.sh TRACE_FILE}"
build="$(mktemp -d "${TMPDIR:-/tmp}/tb_counter.XXXXXX")"
trap 'rm -rf "$build"' EXIT
verilator --cc --exe --build -j 2 -Wall --Mdir "$build" --top-module counter \
  -o tb_counter rtl/counter.v "$(pwd)/checks/tb_counter.cpp" >"$build/build.log" 2>&1 || {
  cat "$build/build.log"
  exit 1
}
"$build/tb_counter" "$trace"
