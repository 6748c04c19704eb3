"""Check asset: recompute the per-detector summary from data/events.csv with the standard library
(independently of pandas) and compare it with the agent's summary.csv. Exit 0 only on a match."""

import csv
import math
import statistics
import sys

COLUMNS = ["detector", "n_events", "mean_energy_gev", "std_energy_gev", "max_energy_gev"]
TOLERANCE = 1e-3


def reference(events_path):
    energies = {}
    with open(events_path, newline="") as handle:
        for row in csv.DictReader(handle):
            if row["quality"] != "good":
                continue
            energies.setdefault(row["detector"], []).append(float(row["energy_gev"]))
    return {
        detector: (len(values), statistics.mean(values), statistics.stdev(values), max(values))
        for detector, values in sorted(energies.items())
    }


def main(events_path, summary_path):
    expected = reference(events_path)
    try:
        with open(summary_path, newline="") as handle:
            reader = csv.DictReader(handle)
            header = reader.fieldnames
            rows = list(reader)
    except FileNotFoundError:
        print(f"FAIL: {summary_path} does not exist")
        return 1
    if header != COLUMNS:
        print(f"FAIL: header is {header}, expected {COLUMNS}")
        return 1
    detectors = [row["detector"] for row in rows]
    if detectors != list(expected):
        print(f"FAIL: detectors {detectors}, expected {list(expected)} (sorted, one row each)")
        return 1
    failures = 0
    for row in rows:
        n, mean, std, peak = expected[row["detector"]]
        got = (int(row["n_events"]), float(row["mean_energy_gev"]), float(row["std_energy_gev"]),
               float(row["max_energy_gev"]))
        want = (n, mean, std, peak)
        for name, g, w in zip(COLUMNS[1:], got, want):
            if not math.isclose(g, w, rel_tol=0, abs_tol=TOLERANCE):
                print(f"FAIL: {row['detector']} {name} = {g}, expected {w:.6f}")
                failures += 1
    if failures:
        return 1
    print(f"PASS: {len(rows)} detectors match the reference")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
