#!/usr/bin/env python3
"""The deterministic check of the dijet selection: the output is well formed and plausible.

It proves what it tests and nothing else: a selection applied to the wrong collection writes a file
that passes it just as well (the critique is there for that; docs/critique.md).
"""
import json
import sys

path = sys.argv[1] if len(sys.argv) > 1 else "results/selection.json"
try:
    result = json.load(open(path))
except (OSError, ValueError) as error:
    sys.exit(f"check: {path} is not readable JSON: {error}")
n, masses = result.get("n_selected"), result.get("mjj")
if not isinstance(n, int) or not isinstance(masses, list):
    sys.exit("check: need an integer n_selected and a list mjj")
if n != len(masses):
    sys.exit(f"check: n_selected is {n} but mjj has {len(masses)} values")
if not 1 <= n <= 60:
    sys.exit(f"check: n_selected {n} is outside 1..60 (the file has 60 events)")
if not all(isinstance(m, (int, float)) and 0 < m < 14000 for m in masses):
    sys.exit("check: every mjj must be a positive mass below 14 TeV")
print(f"ok: {n} events selected")
