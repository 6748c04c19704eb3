"""Harbor verifier: one metric per key of /task/outputs/stats.json, 1.0 when it matches the expected value."""
import json
import sys

got_file, expected_file, reward_file = sys.argv[1:4]
with open(expected_file) as f:
    expected = json.load(f)
try:
    with open(got_file) as f:
        got = json.load(f)
except (OSError, ValueError):
    got = {}
rewards = {}
for key, want in expected.items():
    value = got.get(key) if isinstance(got, dict) else None
    ok = isinstance(value, (int, float)) and abs(value - want) <= 1e-6
    rewards[key] = 1.0 if ok else 0.0
with open(reward_file, "w") as f:
    json.dump(rewards, f)
print(rewards)
