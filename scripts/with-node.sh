#!/usr/bin/env bash
# Runs a command with a Node that can run scifi's TypeScript (>= 22.18) first on PATH: the system
# one when new enough, else the Node 24 that setup-node.sh installs into .node/. npm scripts use it,
# so `npm test` works the same on a machine whose system Node is older.
set -euo pipefail
PATH="$(bash "$(dirname "${BASH_SOURCE[0]}")/setup-node.sh"):$PATH"
export PATH
exec "$@"
