#!/bin/sh
# Runs as root only long enough to open /dev/fuse to everyone, then drops to the non-root
# `scientist` user for the real command: Apptainer must work unprivileged, as on a cluster.
set -eu
[ -e /dev/fuse ] && chmod 666 /dev/fuse
# Docker's default /dev/shm and /tmp are fine; a per-user runtime dir is what Apptainer expects.
mkdir -p /run/user/1000 && chown 1000:1000 /run/user/1000 && chmod 700 /run/user/1000
# SCIFI_HARNESS_SLURM=1 (`apptainer-harness.sh test`): a one-node SLURM cluster in this container,
# started as root by the repository's script (the working folder), its lines kept off stdout.
if [ "${SCIFI_HARNESS_SLURM:-}" = 1 ]; then
  [ -f scripts/start-slurm.sh ] || { echo "harness: SCIFI_HARNESS_SLURM=1 needs the repository as the working folder (scripts/start-slurm.sh)" >&2; exit 1; }
  bash scripts/start-slurm.sh >&2
fi
export HOME=/home/scientist XDG_RUNTIME_DIR=/run/user/1000 USER=scientist LOGNAME=scientist
exec setpriv --reuid=1000 --regid=1000 --init-groups -- "$@"
