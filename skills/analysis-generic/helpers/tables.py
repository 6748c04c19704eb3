"""Helpers of the analysis-generic domain pack (registry.md lists them)."""
import csv


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def where(rows, predicate):
    return [r for r in rows if predicate(r)]
