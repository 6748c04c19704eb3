"""Check asset: validate fit.json, the result of the Gaussian fit to data/histogram.csv.

The fitted mean and sigma must agree with the histogram's own moments (a fit-independent estimate)
to 0.05, the errors must be positive and plausible, and chi2/ndf sane. ROOT is not in every image:
if `import ROOT` works here, the fit must have been done with ROOT (method "root"); otherwise the
numpy/scipy fallback (method "scipy") is accepted and this script says so.
"""

import json
import math
import sys


def moments(histogram_path):
    centres, counts = [], []
    with open(histogram_path) as handle:
        next(handle)
        for line in handle:
            low, high, count = line.strip().split(",")
            centres.append((float(low) + float(high)) / 2)
            counts.append(float(count))
    total = sum(counts)
    mean = sum(c * x for c, x in zip(counts, centres)) / total
    var = sum(c * (x - mean) ** 2 for c, x in zip(counts, centres)) / total
    return mean, math.sqrt(var)


def root_available():
    try:
        import ROOT  # noqa: F401
    except Exception:
        return False
    return True


def main(fit_path, histogram_path):
    try:
        with open(fit_path) as handle:
            fit = json.load(handle)
    except (OSError, ValueError) as error:
        print(f"FAIL: cannot read {fit_path}: {error}")
        return 1
    keys = ["method", "mean", "mean_error", "sigma", "sigma_error", "chi2", "ndf"]
    missing = [k for k in keys if k not in fit]
    if missing:
        print(f"FAIL: {fit_path} lacks {missing}")
        return 1
    numbers = {k: fit[k] for k in keys[1:]}
    if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in numbers.values()):
        print(f"FAIL: non-numeric or non-finite values in {numbers}")
        return 1
    if root_available() and fit["method"] != "root":
        print("FAIL: ROOT is available in this environment, so the fit must use ROOT (method 'root')")
        return 1
    if fit["method"] not in ("root", "scipy"):
        print(f"FAIL: method is {fit['method']!r}, expected 'root' or 'scipy'")
        return 1
    mean, sigma = moments(histogram_path)
    problems = []
    if abs(fit["mean"] - mean) > 0.05:
        problems.append(f"mean {fit['mean']:.4f} differs from the histogram mean {mean:.4f}")
    if abs(abs(fit["sigma"]) - sigma) > 0.05:
        problems.append(f"sigma {fit['sigma']:.4f} differs from the histogram RMS {sigma:.4f}")
    for key in ("mean_error", "sigma_error"):
        if not 0 < fit[key] < 0.1:
            problems.append(f"{key} {fit[key]} is not in (0, 0.1)")
    if fit["ndf"] <= 0 or not 0.3 < fit["chi2"] / fit["ndf"] < 3:
        problems.append(f"chi2/ndf = {fit['chi2']}/{fit['ndf']} is not plausible")
    if problems:
        print("FAIL: " + "; ".join(problems))
        return 1
    note = "" if fit["method"] == "root" else " (ROOT absent here; scipy fallback accepted)"
    print(f"PASS: mean {fit['mean']:.4f}, sigma {abs(fit['sigma']):.4f}{note}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
