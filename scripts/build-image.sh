#!/usr/bin/env bash
# Builds the local scientific image scifi-sci:local from Debian packages (no Docker Hub needed):
#   1. debootstrap --variant=minbase bookworm  ->  docker import  ->  scifi-base:bookworm
#   2. docker build images/Dockerfile.local    ->  scifi-sci:local (label scifi.root=absent)
# Cached: each image carries a label with the hash of what built it (images/ and this script) and is
# rebuilt only when that changed. Idempotent and safe to rerun; concurrent callers wait on a lock.
# Usage: bash scripts/build-image.sh [--base-only] [--force]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BASE_IMAGE="scifi-base:bookworm"
SCI_IMAGE="scifi-sci:local"
MIRROR="${SCIFI_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
BASE_ONLY=0
FORCE=0
for arg in "$@"; do
  case "$arg" in
    --base-only) BASE_ONLY=1 ;;
    --force) FORCE=1 ;;
    *) echo "build-image: unknown option '$arg' (use --base-only or --force)" >&2; exit 2 ;;
  esac
done

say() { printf '[build-image %s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }

# One build at a time across processes (tests, CI and helpers may call this together).
exec 9>"${TMPDIR:-/tmp}/scifi-build-image.lock"
flock 9

docker info >/dev/null 2>&1 || { echo "build-image: no Docker engine answers; run: bash scripts/start-docker.sh" >&2; exit 1; }

label_of() { docker image inspect --format "{{ index .Config.Labels \"$2\" }}" "$1" 2>/dev/null || true; }

# The base only depends on the debootstrap recipe below, so its hash covers this script alone.
base_hash=$(sha256sum scripts/build-image.sh | cut -c1-16)
sci_hash=$( (sha256sum scripts/build-image.sh; find images -type f -print0 | sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-16)

build_base() {
  if [[ $FORCE -eq 0 && "$(label_of "$BASE_IMAGE" scifi.hash)" == "$base_hash" ]]; then
    say "$BASE_IMAGE is up to date (hash $base_hash)"
    return
  fi
  command -v debootstrap >/dev/null || { echo "build-image: debootstrap is missing; run: apt-get install -y debootstrap" >&2; exit 1; }
  local root
  root=$(mktemp -d "${TMPDIR:-/var/tmp}/scifi-rootfs.XXXXXX")
  trap 'rm -rf "$root"' EXIT
  say "debootstrap --variant=minbase bookworm into $root (a few minutes)"
  debootstrap --variant=minbase bookworm "$root" "$MIRROR" >"$root.log" 2>&1 || {
    tail -20 "$root.log" >&2; echo "build-image: debootstrap failed; full log: $root.log" >&2; exit 1; }
  rm -f "$root.log"
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  say "docker import -> $BASE_IMAGE"
  tar -C "$root" -c . | docker import \
    --change "LABEL scifi.hash=$base_hash scifi.image=scifi-base" \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8' \
    --change 'CMD ["/bin/bash"]' - "$BASE_IMAGE" >/dev/null
  rm -rf "$root"
  trap - EXIT
  say "$BASE_IMAGE built"
}

build_sci() {
  if [[ $FORCE -eq 0 && "$(label_of "$SCI_IMAGE" scifi.hash)" == "$sci_hash" ]]; then
    say "$SCI_IMAGE is up to date (hash $sci_hash)"
    return
  fi
  say "docker build images/Dockerfile.local -> $SCI_IMAGE (installs packages from $MIRROR)"
  docker build --quiet --label "scifi.hash=$sci_hash" -t "$SCI_IMAGE" -f images/Dockerfile.local images >/dev/null
  say "$SCI_IMAGE built (ROOT absent: label scifi.root=absent)"
}

build_base
[[ $BASE_ONLY -eq 1 ]] || build_sci
say "done"
