"""Helpers of the lhco domain pack (skills/lhco/helpers/registry.md lists them)."""
import math


def read_events(path):
    events = []
    for line in open(path):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if fields[0] == "0":
            events.append([])
            continue
        events[-1].append({"typ": int(fields[1]), "eta": float(fields[2]), "phi": float(fields[3]),
                           "pt": float(fields[4]), "mass": float(fields[5]), "ntrk": float(fields[6]),
                           "btag": int(float(fields[7]))})
    return events


def objects(event, typ):
    return [o for o in event if o["typ"] == typ]


def select(objs, pt_min, abs_eta_max):
    return sorted((o for o in objs if o["pt"] > pt_min and abs(o["eta"]) < abs_eta_max), key=lambda o: -o["pt"])


def system(*objs):
    e = px = py = pz = 0.0
    for o in objs:
        ox, oy, oz = o["pt"] * math.cos(o["phi"]), o["pt"] * math.sin(o["phi"]), o["pt"] * math.sinh(o["eta"])
        px, py, pz = px + ox, py + oy, pz + oz
        e += math.sqrt(ox * ox + oy * oy + oz * oz + o["mass"] ** 2)
    return {"e": e, "px": px, "py": py, "pz": pz, "pt": math.hypot(px, py),
            "mass": math.sqrt(max(e * e - px * px - py * py - pz * pz, 0.0))}
