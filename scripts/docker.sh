#!/usr/bin/env bash
# Start or stop a throwaway Docker engine on a private socket for the sandbox tests.
#   scripts/docker.sh start DIR   -> installs Debian's docker.io + busybox-static if missing,
#                                    starts dockerd under DIR, imports the local image
#                                    localhost/clawlog-sandbox:latest, prints DOCKER_HOST=...
#   scripts/docker.sh stop DIR    -> stops that dockerd and waits until it is gone
# No registry is reachable: the image is a busybox rootfs imported from a tarball
# (../shared/recipes/docker-engine.sh). Logs: DIR/dockerd.log.
set -euo pipefail
cmd=${1:?start|stop}; D=${2:?DIR}
export DEBIAN_FRONTEND=noninteractive
IMAGE=localhost/clawlog-sandbox:latest

start() {
  if ! command -v dockerd >/dev/null || [ ! -x /bin/busybox ]; then
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends docker.io busybox-static >/dev/null
  fi
  mkdir -p "$D"/data "$D"/exec "$D"/rootfs/bin "$D"/rootfs/tmp "$D"/rootfs/workspace
  chmod 755 "$D"
  dockerd -H "unix://$D/docker.sock" --data-root "$D/data" --exec-root "$D/exec" \
    --pidfile "$D/dockerd.pid" --storage-driver=overlay2 --iptables=false --ip6tables=false \
    --ip-masq=false --bridge=none >"$D/dockerd.log" 2>&1 &
  echo $! >"$D/dockerd.launcher.pid"
  local up=""
  for _ in $(seq 300); do
    if curl -sf --unix-socket "$D/docker.sock" http://d/_ping >/dev/null 2>&1; then up=1; break; fi
    kill -0 "$(cat "$D/dockerd.launcher.pid")" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$up" ]; then
    echo "dockerd did not start; see $D/dockerd.log:" >&2; tail -20 "$D/dockerd.log" >&2; exit 1
  fi
  cp /bin/busybox "$D/rootfs/bin/"
  for applet in $(/bin/busybox --list); do
    [ "$applet" = busybox ] || ln -sf busybox "$D/rootfs/bin/$applet"
  done
  chmod 1777 "$D/rootfs/tmp"
  tar -C "$D/rootfs" -c . | docker -H "unix://$D/docker.sock" import \
    -c 'CMD ["/bin/sh"]' -c 'ENV PATH=/bin' - "$IMAGE" >/dev/null
  echo "DOCKER_HOST=unix://$D/docker.sock"
}

stop() {
  local pid=""
  [ -f "$D/dockerd.pid" ] && pid=$(cat "$D/dockerd.pid")
  [ -z "$pid" ] && [ -f "$D/dockerd.launcher.pid" ] && pid=$(cat "$D/dockerd.launcher.pid")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" && sleep 0.2
  fi
  # overlay and tmpfs mounts left behind would make DIR impossible to remove
  if [ -d "$D" ]; then
    grep -F " $(realpath "$D")/" /proc/mounts | awk '{print $2}' | sort -r |
      while read -r m; do umount -l "$m" 2>/dev/null || true; done
  fi
}

case "$cmd" in
start) start ;;
stop) stop ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
