"""Check asset for the random-walk task, run in compare stages: it reads the agent's results as data
(the run stages' declared outputs) and runs nothing of theirs.

    check_walks.py positions POSITIONS_CSV
    check_walks.py summary POSITIONS_CSV SUMMARY_JSON

`positions` checks the final positions; `summary` checks the summary against them. Exit 0 only when
the check holds."""

import json
import statistics
import sys

WALKS, STEPS = 2000, 400


def load_positions(path):
    with open(path) as handle:
        header = handle.readline().strip()
        if header != "final_position":
            raise ValueError(f"header is {header!r}, expected 'final_position'")
        return [int(line) for line in handle if line.strip()]


def check_positions(positions_path):
    positions = load_positions(positions_path)
    if len(positions) != WALKS:
        return f"{len(positions)} walks, expected {WALKS}"
    if any(abs(p) > STEPS or p % 2 for p in positions):
        return f"a final position is odd or beyond {STEPS}: not a walk of {STEPS} unit steps"
    variance = statistics.variance(positions)
    if not 0.85 * STEPS < variance < 1.15 * STEPS:
        return f"variance {variance:.1f} is not close to the number of steps {STEPS}"
    return None


def check_summary(positions_path, summary_path):
    positions = load_positions(positions_path)
    with open(summary_path) as handle:
        summary = json.load(handle)
    want = {"n": len(positions), "mean": statistics.mean(positions), "variance": statistics.variance(positions)}
    for key, value in want.items():
        got = summary.get(key)
        if not isinstance(got, (int, float)) or abs(got - value) > 1e-6 * max(1.0, abs(value)):
            return f"summary {key} = {got!r}, expected {value}"
    return None


if __name__ == "__main__":
    try:
        problem = {"positions": check_positions, "summary": check_summary}[sys.argv[1]](*sys.argv[2:])
    except (OSError, ValueError, KeyError, TypeError, IndexError) as error:
        problem = str(error)
    print(f"FAIL: {problem}" if problem else "PASS")
    sys.exit(1 if problem else 0)
