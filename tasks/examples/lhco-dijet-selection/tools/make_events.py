#!/usr/bin/env python3
"""Writes data/events.lhco: small generated collider events in the LHC Olympics text format.

Deterministic (fixed seed), so the file in the repository is exactly what this script writes:
    python3 tools/make_events.py > data/events.lhco
Each event has 2-5 jets (typ 4), some b-tagged (btag 1), some outside the selection (low pT or
forward); some events have a b-tagged jet only among the jets that fail the selection: there a veto
on all jets and a veto on the selected jets give different answers.
"""
import math
import random

rng = random.Random(20261202)
print("#  typ      eta      phi       pt    jmas  ntrk  btag   had/em   dum1   dum2")
for event in range(1, 61):
    print(f"0 {event:6d} 0")
    jets = []
    for _ in range(rng.randint(2, 5)):
        pt = round(rng.uniform(15.0, 180.0), 2)
        eta = round(rng.uniform(-4.0, 4.0), 3)
        phi = round(rng.uniform(0.0, 2 * math.pi), 3)
        jets.append([eta, phi, pt, round(rng.uniform(2.0, 20.0), 2), rng.randint(2, 20), 0])
    if event % 4 == 0:
        # A b-tagged jet that fails the selection (pT < 30 GeV): only an all-jets veto removes the event.
        jets.append([round(rng.uniform(-2.0, 2.0), 3), round(rng.uniform(0, 6.28), 3), 22.5, 4.1, 6, 1])
    if event % 7 == 0:
        jets[0][5] = 1  # a b-tag on a jet that may pass the selection
    jets.sort(key=lambda j: -j[2])
    for i, (eta, phi, pt, mass, ntrk, btag) in enumerate(jets, start=1):
        print(f"{i} 4 {eta:8.3f} {phi:8.3f} {pt:8.2f} {mass:7.2f} {ntrk:5d} {btag:5d} {1.5:8.2f} 0 0")
    met_phi = round(rng.uniform(0, 6.28), 3)
    print(f"{len(jets) + 1} 6 {0.0:8.3f} {met_phi:8.3f} {round(rng.uniform(5, 60), 2):8.2f} 0.00 0 0 0.00 0 0")
