#!/usr/bin/env bash
# Installs the Debian packages scifi's engines and tests use. Idempotent: only missing ones are fetched.
# Usage: bash scripts/install-deps.sh [PACKAGE...]   (a subset of the list below; default: all of it.
# .ci/run installs what the image builds need first and the rest alongside them.)
set -euo pipefail
packages=(docker.io debootstrap debian-archive-keyring xz-utils slurm-wlm munge chromium ca-certificates acl nodejs)
# nodejs: Debian's own (older than 22.18), the system Node bin/scifi.js relaunches from (test/run/launcher.e2e.test.ts).
if [ $# -gt 0 ]; then
  for p in "$@"; do
    [[ " ${packages[*]} " == *" $p "* ]] ||
      { echo "install-deps: '$p' is not one of scifi's packages; choose from: ${packages[*]}" >&2; exit 2; }
  done
  packages=("$@")
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "installing: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "debian packages present: ${packages[*]}"
