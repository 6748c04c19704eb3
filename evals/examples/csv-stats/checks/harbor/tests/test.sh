#!/bin/bash
mkdir -p /task/.harbor/verifier
python3 /task/checks/harbor/tests/check_stats.py /task/outputs/stats.json /task/checks/harbor/tests/expected.json /task/.harbor/verifier/reward.json
