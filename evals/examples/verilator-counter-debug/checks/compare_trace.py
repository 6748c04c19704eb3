#!/usr/bin/env python3
"""Compare stage: the counter's trace (written by checks/tb_counter.cpp in a run stage) against a
cycle-accurate reference model, cycle by cycle. It reads the trace as data and runs nothing of the
agent's: the stimulus and the reference are recomputed here. Exit 0 only if every cycle matches.

Usage: compare_trace.py TRACE_FILE
"""
import sys

MODULUS = 10
CYCLES = 500


def stimulus():
    """The driver's stimulus, recomputed: (rst, en) per cycle."""
    lfsr = 0xACE1
    for cycle in range(CYCLES):
        lfsr = (lfsr >> 1) ^ ((-(lfsr & 1)) & 0xB400)
        lfsr &= 0xFFFFFFFF
        yield cycle < 2 or cycle == 250, (lfsr & 3) != 0


def reference():
    """(rst, en, count, wrap) per cycle of a correct modulo-N counter."""
    count, wrap = 0, False
    for rst, en in stimulus():
        if rst:
            count, wrap = 0, False
        elif en:
            wrap = count == MODULUS - 1
            count = 0 if wrap else count + 1
        else:
            wrap = False
        yield int(rst), int(en), count, int(wrap)


def read_trace(path):
    rows = []
    with open(path) as handle:
        for number, line in enumerate(handle, 1):
            fields = line.split()
            if len(fields) != 5 or not all(f.lstrip("-").isdigit() for f in fields):
                sys.exit(f"FAIL: {path}:{number} is not `cycle rst en count wrap`: {line.strip()[:80]!r}")
            rows.append(tuple(int(f) for f in fields))
    return rows


def main(path):
    rows = read_trace(path)
    if len(rows) != CYCLES:
        print(f"FAIL: the trace has {len(rows)} cycles, expected {CYCLES} (did the simulation stop early?)")
        return 1
    errors = 0
    wraps = 0
    for cycle, (row, want) in enumerate(zip(rows, reference())):
        wraps += want[3]
        if row != (cycle, *want):
            if errors < 10:
                print(f"cycle {cycle}: rst={row[1]} en={row[2]} count={row[3]} wrap={row[4]}, "
                      f"expected rst={want[0]} en={want[1]} count={want[2]} wrap={want[3]}")
            errors += 1
    if errors:
        print(f"FAIL: {errors} mismatching cycles out of {CYCLES}")
        return 1
    print(f"PASS: {CYCLES} cycles, {wraps} wraps")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: compare_trace.py TRACE_FILE")
    sys.exit(main(sys.argv[1]))
