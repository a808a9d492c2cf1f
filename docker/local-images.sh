#!/usr/bin/env bash
# Local stand-ins for the two public images docker/ names, for machines that reach no image registry (docker/test.sh
# calls this only when `docker pull` fails). Each is built once and kept under its tag; a rerun finds it and returns.
#
#   bash docker/local-images.sh node   # rcp-local/node:20-bookworm-slim: for `--build-arg BASE_IMAGE=...`
#   bash docker/local-images.sh redis  # rcp-local/redis:7-bookworm: for RCP_REDIS_IMAGE in compose.yaml
#
# node: a Debian bookworm root filesystem from Debian's own packages (`debootstrap --variant=minbase`, from the mirror
# apt on this machine is configured with, read now) plus this machine's Node.js 20 (binary, npm, headers), laid out as
# the official image lays it out (/usr/local, user `node` 1000:1000), then `docker import`ed. redis: that base plus
# Debian's redis-server (7.0), built with `docker build --network host`. Run as root.
set -euo pipefail

NODE_TAG=${RCP_LOCAL_NODE_IMAGE:-rcp-local/node:20-bookworm-slim}
REDIS_TAG=${RCP_LOCAL_REDIS_IMAGE:-rcp-local/redis:7-bookworm}
say() { echo "local-images: $*" >&2; }
die() { say "$*"; exit 1; }

# The Debian mirror apt uses here (the site of the bookworm "Debian" index), else Debian's own redirector.
debian_mirror() {
  local site
  site=$(apt-get indextargets --format '$(SITE) $(LABEL) $(CODENAME)' 2>/dev/null |
    awk '$2 == "Debian" && $3 == "bookworm" { print $1; exit }') || true
  printf '%s' "${site:-http://deb.debian.org/debian}"
}

build_node() {
  if docker image inspect "$NODE_TAG" >/dev/null 2>&1; then say "$NODE_TAG: cached"; return; fi
  local node prefix npm_dir headers mirror work root
  node=$(readlink -f "$(command -v node)") || die "no node on PATH to put in the base image"
  [ "$("$node" -p 'process.versions.node.split(".")[0]')" = 20 ] || die "$node is not Node.js 20"
  prefix=$(dirname "$(dirname "$node")")
  npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
  headers=$prefix/include/node
  [ -f "$npm_dir/package.json" ] || die "npm not found beside $node"
  [ -f "$headers/node.h" ] || die "Node.js headers not found at $headers (native modules build against them)"
  command -v debootstrap >/dev/null || {
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
  }
  mirror=$(debian_mirror)
  work=$(mktemp -d /var/tmp/rcp-base.XXXXXX)
  # shellcheck disable=SC2064
  trap "rm -rf '$work'" RETURN
  root=$work/rootfs
  say "debootstrap bookworm from $mirror"
  debootstrap --variant=minbase bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log" >&2; die "debootstrap failed"; }
  printf 'deb %s bookworm main\ndeb %s bookworm-updates main\n' "$mirror" "$mirror" >"$root/etc/apt/sources.list"
  # Node.js where the official image has it.
  install -D -m 755 "$node" "$root/usr/local/bin/node"
  mkdir -p "$root/usr/local/lib/node_modules" "$root/usr/local/include"
  cp -a "$npm_dir" "$root/usr/local/lib/node_modules/npm"
  cp -a "$headers" "$root/usr/local/include/node"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
  # Every library the binary links must be in the root already (Debian's libstdc++6 and libc6 are).
  env -u NODE_EXTRA_CA_CERTS chroot "$root" /usr/local/bin/node -e 'process.exit(0)' || die "node does not run in the bookworm root (ldd $node)"
  chroot "$root" sh -c 'groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node'
  # What the official slim image leaves out too.
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* \
    "$root"/usr/share/man/* "$root"/usr/share/locale/* "$root"/usr/share/info/* "$root"/var/log/*.log "$root"/tmp/*
  tar -C "$root" --numeric-owner -cf - . |
    docker import \
      -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      -c "ENV NODE_VERSION=$("$node" -p process.versions.node)" \
      -c 'CMD ["node"]' \
      -m "debootstrap bookworm (minbase) + Node.js $("$node" --version) from this machine" - "$NODE_TAG" >/dev/null
  say "$NODE_TAG: built ($(docker image inspect -f '{{.Size}}' "$NODE_TAG" | awk '{ printf "%d MB", $1 / 1e6 }'))"
}

build_redis() {
  if docker image inspect "$REDIS_TAG" >/dev/null 2>&1; then say "$REDIS_TAG: cached"; return; fi
  build_node
  printf '%s\n' \
    "FROM $NODE_TAG" \
    'RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server \' \
    ' && rm -rf /var/lib/apt/lists/* /usr/local/bin/node /usr/local/lib/node_modules /usr/local/include/node /usr/local/bin/npm /usr/local/bin/npx' \
    'USER redis' \
    'EXPOSE 6379' \
    '# As the official image does: a redis-server without a config file listens to other containers too.' \
    'ENTRYPOINT ["sh", "-c", "if [ \"$1\" = redis-server ]; then shift; exec redis-server \"$@\" --protected-mode no; fi; exec \"$@\"", "redis-entrypoint"]' \
    'CMD ["redis-server"]' |
    docker build --network host -t "$REDIS_TAG" - >/var/tmp/rcp-redis-image.log 2>&1 ||
    { tail -20 /var/tmp/rcp-redis-image.log >&2; die "building $REDIS_TAG failed"; }
  say "$REDIS_TAG: built (Debian's $(docker run --rm --network none "$REDIS_TAG" redis-server --version | grep -o 'v=[0-9.]*'))"
}

case "${1:-}" in
  node) build_node ;;
  redis) build_redis ;;
  *) die "usage: $0 node|redis" ;;
esac
