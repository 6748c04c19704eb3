#!/usr/bin/env bash
# Starts a Docker engine if none answers, and waits for it. Idempotent: safe to rerun.
set -euo pipefail
if docker info >/dev/null 2>&1; then exit 0; fi
if ! command -v dockerd >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
fi
if command -v systemctl >/dev/null 2>&1 && systemctl is-system-running >/dev/null 2>&1; then
  systemctl start docker || true
fi
if ! docker info >/dev/null 2>&1; then
  mkdir -p /var/log
  nohup dockerd >/var/log/scifi-dockerd.log 2>&1 &
fi
for _ in $(seq 1 120); do
  if docker info >/dev/null 2>&1; then echo "docker engine: $(docker version --format '{{.Server.Version}}')"; exit 0; fi
  sleep 0.5
done
echo "start-docker: the Docker engine did not answer within 60 s; see /var/log/scifi-dockerd.log" >&2
tail -20 /var/log/scifi-dockerd.log >&2 || true
exit 1
