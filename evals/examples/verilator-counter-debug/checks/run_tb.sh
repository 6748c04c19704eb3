#!/bin/sh
# Check: build rtl/counter.v with the fixed testbench (checks/tb_counter.cpp) and run it.
# Builds outside the task folder so a check leaves no files behind.
set -eu
build="$(mktemp -d "${TMPDIR:-/tmp}/tb_counter.XXXXXX")"
trap 'rm -rf "$build"' EXIT
verilator --cc --exe --build -j 2 -Wall --Mdir "$build" --top-module counter \
  -o tb_counter rtl/counter.v "$(pwd)/checks/tb_counter.cpp" >"$build/build.log" 2>&1 || {
  cat "$build/build.log"
  exit 1
}
"$build/tb_counter"
