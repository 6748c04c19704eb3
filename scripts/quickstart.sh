#!/usr/bin/env bash
# Quick start on a fresh Debian machine (root or sudo): installs what scifi needs, builds the local
# image, and runs a real task end to end: the Verilator counter-debug example, in a real Docker
# sandbox, driven by the SCRIPTED model (no API key needed; the script is
# test/fixtures/runs/verilator-pass.yaml). The example is copied first, so the repository stays clean.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
step() { printf '\n==> %s\n' "$1"; }

step "Debian packages (docker.io, debootstrap, slurm-wlm, munge, chromium)"
bash scripts/install-deps.sh
step "Node 24"
PATH="$(bash scripts/setup-node.sh):$PATH"
export PATH
step "npm ci"
npm ci --no-audit --no-fund
step "Docker engine"
bash scripts/start-docker.sh
step "local image scifi-sci:local (first build takes several minutes)"
bash scripts/build-image.sh

demo="${SCIFI_QUICKSTART_DIR:-$(mktemp -d /tmp/scifi-quickstart.XXXXXX)}"
mkdir -p "$demo"
rm -rf "$demo/verilator-counter-debug"
cp -r tasks/examples/verilator-counter-debug "$demo/"
export SCIFI_HOME="$demo"
step "scifi run (scripted model) in $demo"
set +e
node bin/scifi.js run "$demo/verilator-counter-debug" --model "scripted:$PWD/test/fixtures/runs/verilator-pass.yaml"
code=$?
set -e
# The newest run folder (runs/ also holds index.html, the page of all runs).
run="$(find "$demo/runs" -mindepth 1 -maxdepth 1 -type d -printf "%T@ %f\n" | sort -rn | head -n 1 | cut -d" " -f2)"
step "the record of run $run"
node bin/scifi.js audit verify "$demo/runs/$run"
node bin/scifi.js audit stats "$demo/runs/$run"
node bin/scifi.js report "$demo/runs/$run" -o "$demo/runs/$run/report.html"
cat <<MSG

Run folder:   $demo/runs/$run   (history.jsonl, audit.jsonl, state.json, spec.json, report.html)
Report:       $demo/runs/$run/report.html
Next:         npx scifi --help     |   npm test   (the whole suite; \`bash .ci/run\` starts every engine first)
MSG
exit "$code"
