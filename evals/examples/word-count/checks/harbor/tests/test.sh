#!/bin/bash
# Harbor verifier: reward 1 when /task/outputs/counts.txt is exactly the expected table, else 0.
mkdir -p /task/.harbor/verifier
if [ -f /task/outputs/counts.txt ] && diff -u /task/checks/harbor/tests/expected.txt /task/outputs/counts.txt; then
  echo 1 > /task/.harbor/verifier/reward.txt
else
  echo 0 > /task/.harbor/verifier/reward.txt
fi
