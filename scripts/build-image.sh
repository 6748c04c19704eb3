#!/usr/bin/env bash
# Builds the local scientific image scifi-sci:local from Debian packages (no Docker Hub needed):
#   1. debootstrap --variant=minbase bookworm  ->  docker import  ->  scifi-base:bookworm
#   2. docker build images/Dockerfile.local    ->  scifi-sci:local (label scifi.root=absent)
# Cached: each image carries a label (scifi.hash) with the hash of what built it (the base recipe,
# images/Dockerfile.local) and is rebuilt only when that changed. Idempotent and safe to rerun; concurrent callers wait on a lock.
# Usage: bash scripts/build-image.sh [--base-only] [--force]
#        bash scripts/build-image.sh --check [IMAGE]   (exit 0: up to date, 3: missing or stale)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

BASE_IMAGE="scifi-base:bookworm"
SCI_IMAGE="scifi-sci:local"
MIRROR="${SCIFI_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
BASE_ONLY=0
FORCE=0
CHECK=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --base-only) BASE_ONLY=1 ;;
    --force) FORCE=1 ;;
    --check) CHECK="${2:-$SCI_IMAGE}"; [[ $# -gt 1 ]] && shift ;;
    *) echo "build-image: unknown option '$1' (use --base-only, --force or --check [IMAGE])" >&2; exit 2 ;;
  esac
  shift
done

say() { printf '[build-image %s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }

docker info >/dev/null 2>&1 || { echo "build-image: no Docker engine answers; run: bash scripts/start-docker.sh" >&2; exit 1; }

label_of() { docker image inspect --format "{{ index .Config.Labels \"$2\" }}" "$1" 2>/dev/null || true; }

# The base depends only on the debootstrap recipe (suite, variant, mirror); bump the version to rebuild.
base_hash=$(printf 'bookworm minbase %s v1' "$MIRROR" | sha256sum | cut -c1-16)
# The scientific image depends on its Dockerfile and on the base recipe. (Not on other files in images/,
# such as the Apptainer harness, nor on comments here: a needless rebuild costs ten minutes.)
# Bump SCI_RECIPE when build_sci below changes how the image is made.
SCI_RECIPE=v1
sci_hash=$( (echo "$SCI_RECIPE $base_hash"; sha256sum images/Dockerfile.local) | sha256sum | cut -c1-16)

up_to_date() { [[ "$(label_of "$1" scifi.hash)" == "$2" ]]; }

if [[ -n "$CHECK" ]]; then
  case "$CHECK" in
    "$BASE_IMAGE") want=$base_hash ;;
    "$SCI_IMAGE") want=$sci_hash ;;
    *) echo "build-image: --check knows $BASE_IMAGE and $SCI_IMAGE, not '$CHECK'" >&2; exit 2 ;;
  esac
  have=$(label_of "$CHECK" scifi.hash)
  if [[ -z "$have" ]]; then echo "$CHECK is missing"; exit 3; fi
  if [[ "$have" != "$want" ]]; then echo "$CHECK is stale (built from $have, sources now $want)"; exit 3; fi
  echo "$CHECK is up to date ($want)"; exit 0
fi

# Fast path without the lock: nothing to do when every wanted image is up to date.
if [[ $FORCE -eq 0 ]] && up_to_date "$BASE_IMAGE" "$base_hash" && { [[ $BASE_ONLY -eq 1 ]] || up_to_date "$SCI_IMAGE" "$sci_hash"; }; then
  say "up to date: $BASE_IMAGE$([[ $BASE_ONLY -eq 1 ]] || echo " and $SCI_IMAGE")"
  exit 0
fi

# One build at a time across processes (tests, CI and helpers may call this together); whoever
# waited re-checks below, so a build that finished meanwhile is not repeated.
exec 9>"${TMPDIR:-/tmp}/scifi-build-image.lock"
flock 9

build_base() {
  if [[ $FORCE -eq 0 ]] && up_to_date "$BASE_IMAGE" "$base_hash"; then
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
  if [[ $FORCE -eq 0 ]] && up_to_date "$SCI_IMAGE" "$sci_hash"; then
    say "$SCI_IMAGE is up to date (hash $sci_hash)"
    return
  fi
  say "docker build images/Dockerfile.local -> $SCI_IMAGE (installs packages from $MIRROR)"
  local log
  log=$(mktemp "${TMPDIR:-/tmp}/scifi-build.XXXXXX.log")
  # Progress: one line per Dockerfile step; the full log is shown only when the build fails.
  if ! docker build --label "scifi.hash=$sci_hash" -t "$SCI_IMAGE" -f images/Dockerfile.local images 2>&1 \
      | tee "$log" | grep --line-buffered -E '^Step [0-9]+/' | sed -u 's/^/  /'; then
    tail -30 "$log" >&2; echo "build-image: docker build failed; full log: $log" >&2; exit 1
  fi
  rm -f "$log"
  say "$SCI_IMAGE built (ROOT absent: label scifi.root=absent)"
}

build_base
[[ $BASE_ONLY -eq 1 ]] || build_sci
say "done"
