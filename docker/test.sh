#!/usr/bin/env bash
# docker/test.sh (npm run test:docker): builds docker/Dockerfile the way a user does, runs the image and checks it,
# then runs docker/compose.yaml (the server twice, plus Redis). Run as root, from anywhere; it needs Docker and, where
# no daemon runs, starts Debian's dockerd (installing docker.io with apt if it is missing) and stops it at the end.
#
# Checks, each one line of output, any failure exits non-zero:
#   - the image builds from docker/Dockerfile (docker build -f docker/Dockerfile .); its size is printed;
#   - without API keys, the server (bound to 0.0.0.0 in the image) refuses to start;
#   - with a key, the HEALTHCHECK turns healthy; time from `docker run` to the first answered ping and to healthy;
#   - without the key a request is refused (-32012); with it, ping, embed, index/add and retrieve answer over HTTP;
#   - the server runs as the non-root user `node` (uid 1000) and cannot write to its own code;
#   - `docker stop` (SIGTERM) while a request is in flight: the request is answered, the exit status is 0, and it
#     exits within the stop grace period (not killed);
#   - a new container on the same /data volume finds the documents added before;
#   - compose: two replicas of the server and Redis come up healthy, and spend one shared rate-limit budget: a read
#     answered by one replica empties the caller's bucket for the other.
#
# Where no image registry is reachable (docker pull fails), the two public images are replaced by local builds
# (docker/local-images.sh: Debian bookworm from Debian's mirror, plus this machine's Node.js 20 / Debian's Redis),
# passed in as BASE_IMAGE and RCP_REDIS_IMAGE; they are kept for the next run. The npm registry this machine uses
# (`npm config get registry`) and, where a proxy re-signs its TLS, that proxy's CA (npm_ca below) are passed as
# NPM_REGISTRY / NPM_CA.
#
# Exit status: 0 passed; 3 no Docker engine answers here and none could be started (the reason is printed); else failed.
# Environment: RCP_IMAGE (tag to build, default rcp-server), RCP_DOCKERD_ARGS (flags for a dockerd this script
# starts; default: overlay2 where an overlay mounts, else vfs; no iptables, no default bridge), RCP_DOCKER_KEEP_DAEMON=1
# (leave that dockerd running).
set -euo pipefail
cd "$(dirname "$0")/.."
T0=$(date +%s.%N)

IMAGE=${RCP_IMAGE:-rcp-server}
OFFICIAL_BASE=node:20-bookworm-slim
OFFICIAL_REDIS=redis:7-bookworm
LOCAL_BASE=rcp-local/node:20-bookworm-slim
LOCAL_REDIS=rcp-local/redis:7-bookworm
KEY=rcp-docker-test-key-0123456789
KEYS='[{"key":"'$KEY'","scopes":["read","write","monitor"]}]'
RUN_ID=rcp-test-$$
VOLUME=$RUN_ID-data
NETWORK=$RUN_ID-net
COMPOSE_PROJECT=${RUN_ID//-/}
GRACE=30
DOCKERD_PID=
COMPOSE=()
WORK=$(mktemp -d)

say() { printf 'docker/test.sh: %s\n' "$*"; }
ok() { printf '  ok   %s\n' "$*"; }
fail() {
  printf '  FAIL %s\n' "$*" >&2
  exit 1
}
# No engine here, and none can be started: said plainly, exit 3 (.ci/run reports the step as not run).
cannot() {
  say "CANNOT RUN: $*" >&2
  exit 3
}
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

cleanup() {
  local status=$?
  set +e
  if [ ${#COMPOSE[@]} -gt 0 ]; then
    [ $status -eq 0 ] || "${COMPOSE[@]}" logs --no-color --tail 30 >&2 2>/dev/null
    "${COMPOSE[@]}" down -v --timeout 5 >/dev/null 2>&1
  fi
  for c in $(docker ps -aq --filter "name=$RUN_ID" 2>/dev/null); do
    [ $status -eq 0 ] || { echo "--- logs of $(docker inspect -f '{{.Name}}' "$c")" >&2; docker logs --tail 30 "$c" >&2 2>&1; }
    docker rm -f "$c" >/dev/null 2>&1
  done
  docker volume rm "$VOLUME" >/dev/null 2>&1
  docker network rm "$NETWORK" >/dev/null 2>&1
  if [ -n "$DOCKERD_PID" ] && [ "${RCP_DOCKER_KEEP_DAEMON:-}" != 1 ]; then
    kill "$DOCKERD_PID" 2>/dev/null
    for _ in $(seq 30); do kill -0 "$DOCKERD_PID" 2>/dev/null || break; sleep 1; done
  fi
  rm -rf "$WORK"
  case $status in
    0) say "passed in $(since "$T0") s" ;;
    3) say "not run" >&2 ;;
    *) say "FAILED (exit $status) after $(since "$T0") s" >&2 ;;
  esac
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- the engine --------------------------------------------------------------------------------------------------
if ! docker info >/dev/null 2>&1; then
  [ "$(id -u)" -eq 0 ] || cannot "no Docker daemon answers, and starting one needs root"
  if ! command -v dockerd >/dev/null; then
    say "installing Debian's docker.io (dockerd)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker.io >/dev/null; } ||
      cannot "no dockerd, and apt-get install docker.io failed"
  fi
  # overlay2 where this kernel lets root mount an overlay (far faster: vfs copies the whole image at every step),
  # else vfs; no iptables and no default bridge, which such machines lack.
  driver=vfs
  probe=$(mktemp -d /var/tmp/rcp-overlay.XXXXXX)
  mkdir -p "$probe"/{l,u,w,m}
  if mount -t overlay overlay -o "lowerdir=$probe/l,upperdir=$probe/u,workdir=$probe/w" "$probe/m" 2>/dev/null; then
    umount "$probe/m" && driver=overlay2
  fi
  rm -rf "$probe"
  # shellcheck disable=SC2086
  setsid dockerd ${RCP_DOCKERD_ARGS:---storage-driver=$driver --iptables=false --bridge=none --ip-forward=false} \
    >/var/log/rcp-dockerd.log 2>&1 &
  DOCKERD_PID=$!
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; kill -0 "$DOCKERD_PID" 2>/dev/null || break; sleep 1; done
  docker info >/dev/null 2>&1 ||
    cannot "dockerd did not start: $(grep -v '^\s*$' /var/log/rcp-dockerd.log | tail -1 | cut -c1-200)"
  say "started dockerd (pid $DOCKERD_PID, log /var/log/rcp-dockerd.log)"
fi
say "engine $(docker version -f '{{.Server.Version}}'), storage $(docker info -f '{{.Driver}}')"

# No default bridge (dockerd --bridge=none): builds run on the host's network, containers on a network of our own.
BUILD_NET=()
docker network inspect bridge >/dev/null 2>&1 || BUILD_NET=(--network host)
docker network create "$NETWORK" >/dev/null

# The official image if it is here or can be pulled, else a local one.
have_image() {
  docker image inspect "$1" >/dev/null 2>&1 || timeout 120 docker pull -q "$1" >/dev/null 2>&1
}
BASE_ARGS=()
if have_image "$OFFICIAL_BASE"; then
  say "base image: $OFFICIAL_BASE"
else
  say "base image: $OFFICIAL_BASE cannot be pulled here; using $LOCAL_BASE"
  bash docker/local-images.sh node
  BASE_ARGS=(--build-arg "BASE_IMAGE=$LOCAL_BASE")
fi

# npm_ca REGISTRY_URL [CAFILE]: prints, as PEM, the CA certificate the registry's TLS chain ends in when Node.js's own
# CA store does not hold it (a TLS-intercepting proxy's CA, which this machine trusts through npm's `cafile` or
# NODE_EXTRA_CA_CERTS); prints nothing when the image's Node.js will trust the registry on its own.
npm_ca() {
  node --input-type=module - "$@" <<'JS'
import { readFileSync } from 'node:fs';
import tls from 'node:tls';

const [registry, cafile] = process.argv.slice(2);
const url = new URL(registry ?? 'https://registry.npmjs.org/');
if (url.protocol !== 'https:') process.exit(0);

const extra = [cafile, process.env.NODE_EXTRA_CA_CERTS].filter((f) => f && f !== 'null' && f !== 'undefined');
const ca = [...tls.rootCertificates, ...extra.map((f) => readFileSync(f, 'utf8'))];
const pem = (der) => `-----BEGIN CERTIFICATE-----\n${der.toString('base64').match(/.{1,64}/g).join('\n')}\n-----END CERTIFICATE-----`;

const socket = tls.connect({ host: url.hostname, port: Number(url.port || 443), servername: url.hostname, ca }, () => {
  let cert = socket.getPeerCertificate(true);
  while (cert.issuerCertificate && cert.issuerCertificate !== cert && cert.issuerCertificate.raw) cert = cert.issuerCertificate;
  socket.end();
  const root = pem(cert.raw);
  const known = new Set(tls.rootCertificates.map((c) => c.replace(/\s+/g, '')));
  if (!known.has(root.replace(/\s+/g, ''))) console.log(root);
});
socket.setTimeout(10_000, () => {
  console.error(`npm-ca: ${url.host} did not answer`);
  process.exit(1);
});
socket.on('error', (error) => {
  console.error(`npm-ca: ${url.host}: ${error.message}`);
  process.exit(1);
});
JS
}

# ---- build ---------------------------------------------------------------------------------------------------------
NPM_ARGS=()
REGISTRY=$(npm config get registry 2>/dev/null || true)
if [ -n "$REGISTRY" ]; then NPM_ARGS+=(--build-arg "NPM_REGISTRY=$REGISTRY"); fi
CA=$(npm_ca "${REGISTRY:-https://registry.npmjs.org/}" "$(npm config get cafile 2>/dev/null || true)") ||
  fail "cannot reach the npm registry $REGISTRY from here"
if [ -n "$CA" ]; then NPM_ARGS+=(--build-arg "NPM_CA=$CA"); fi
say "npm registry ${REGISTRY:-default}${CA:+ (its TLS is re-signed by a local CA: passed as NPM_CA)}"

t=$(date +%s.%N)
docker build "${BUILD_NET[@]}" "${BASE_ARGS[@]}" "${NPM_ARGS[@]}" -f docker/Dockerfile -t "$IMAGE" . >"$WORK/build.log" 2>&1 ||
  { tail -40 "$WORK/build.log" >&2; fail "docker build -f docker/Dockerfile ."; }
SIZE=$(docker image inspect -f '{{.Size}}' "$IMAGE")
ok "built $IMAGE in $(since "$t") s: $((SIZE / 1000000)) MB"

# ---- helpers -------------------------------------------------------------------------------------------------------
# rpc PORT|HOST:PORT METHOD PARAMS [KEY]: the JSON-RPC answer's body (curl fails on a non-2xx status).
rpc() {
  local at=$1
  [[ $at == *:* ]] || at=127.0.0.1:$at
  curl -sf --max-time 60 "http://$at/rcp/$2" -H 'Content-Type: application/json' \
    ${4:+-H "Authorization: Bearer $4"} -d '{"jsonrpc":"2.0","id":1,"method":"'"$2"'","params":'"$3"'}'
}
# expect JSON JS-EXPRESSION WHAT: the expression, over the parsed answer `r`, must be true.
expect() {
  printf '%s' "$1" |
    node -e 'const r = JSON.parse(require("fs").readFileSync(0, "utf8")); if (!(eval(process.argv[1]))) process.exit(1)' "$2" ||
    fail "$3: got $(printf '%.300s' "$1")"
  ok "$3"
}
port_of() { docker port "$1" 8080/tcp | head -1 | sed 's/.*://'; }
# wait_ready CONTAINER: seconds until ping answers; prints them.
wait_ready() {
  local port t=$2
  for _ in $(seq 600); do
    [ "$(docker inspect -f '{{.State.Running}}' "$1")" = true ] || fail "$1 exited: $(docker logs --tail 5 "$1" 2>&1)"
    port=$(port_of "$1" 2>/dev/null || true)
    if [ -n "$port" ] && rpc "$port" ping '{}' "$KEY" >/dev/null 2>&1; then since "$t"; return; fi
    sleep 0.1
  done
  fail "$1 never answered ping"
}
wait_healthy() {
  local t=$2
  for _ in $(seq 900); do
    case $(docker inspect -f '{{.State.Health.Status}}' "$1") in
      healthy) since "$t"; return ;;
      unhealthy) fail "$1 turned unhealthy" ;;
    esac
    sleep 0.1
  done
  fail "$1 never turned healthy"
}
quiet() { grep -v 'IPv4 forwarding is disabled' >&2 || true; } # dockerd --ip-forward=false: loopback ports still work
run_server() { # NAME: a server on our network, its port published on loopback, the data on our volume
  docker run -d --name "$1" --network "$NETWORK" -p 127.0.0.1::8080 -e RCP_API_KEYS="$KEYS" -v "$VOLUME:/data" \
    "$IMAGE" >/dev/null 2> >(quiet)
}

# ---- the image -----------------------------------------------------------------------------------------------------
say "checking the image"
REFUSED=$(timeout 60 docker run --rm --name "$RUN_ID-nokeys" --network "$NETWORK" "$IMAGE" 2>&1) && rc=0 || rc=$?
{ [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; } || fail "a 0.0.0.0 bind without API keys started (exit $rc)"
ok "without API keys it refuses to start (exit $rc: $(printf '%s' "$REFUSED" | tail -1 | cut -c1-110))"

t=$(date +%s.%N)
run_server "$RUN_ID-a"
READY=$(wait_ready "$RUN_ID-a" "$t")
STARTED=$(date -d "$(docker inspect -f '{{.State.StartedAt}}' "$RUN_ID-a")" +%s.%N)
CREATE=$(awk -v a="$t" -v b="$STARTED" 'BEGIN { printf "%.1f", b - a }')
ok "docker run to first ping answered: $READY s (container created and started in $CREATE s, then the server)"
HEALTHY=$(wait_healthy "$RUN_ID-a" "$t")
ok "docker run to healthy (HEALTHCHECK on /readyz): $HEALTHY s"
PORT=$(port_of "$RUN_ID-a")

expect "$(rpc "$PORT" embed '{"inputs":["hello world"]}')" 'r.error.code === -32012 && r.id === null' \
  "without the key: refused (-32012, id null)"
expect "$(rpc "$PORT" ping '{"nonce":7}' "$KEY")" 'r.result.nonce === 7' "ping"
expect "$(rpc "$PORT" embed '{"inputs":["hello world"]}' "$KEY")" \
  'r.result.vectors.length === 1 && r.result.vectors[0].length === 512' "embed: one 512-d vector"
expect "$(rpc "$PORT" index/add '{"documents":[{"id":"owl","text":"Owls hunt at night."},{"id":"bee","text":"Bees make honey in summer."}]}' "$KEY")" \
  'JSON.stringify(r.result.ids) === JSON.stringify(["owl","bee"])' "index/add: two documents"
expect "$(rpc "$PORT" retrieve '{"query":"night hunters","k":1}' "$KEY")" \
  'r.result.hits.length === 1 && r.result.hits[0].id === "owl#0"' "retrieve: finds the owl"

[ "$(docker inspect -f '{{.Config.User}}' "$RUN_ID-a")" = node ] || fail "the image's user is not node"
uid=$(docker exec "$RUN_ID-a" sh -c "awk '/^Uid:/ { print \$2 }' /proc/1/status")
[ "$uid" = 1000 ] || fail "the server (pid 1) runs as uid $uid"
if docker exec "$RUN_ID-a" sh -c 'touch /app/dist/x' 2>/dev/null; then fail "the server can write to its own code"; fi
ok "runs as node (uid 1000), its code read-only to it, /data its own"

# SIGTERM with a request in flight: a large embed batch, then docker stop. Sent to the container's own address where
# the host reaches it: a published port goes through docker-proxy, which dockerd stops with the container, cutting
# what it still relays (a 1.4 MB answer, here, about one time in three) however cleanly the server drained.
DIRECT=$(docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$RUN_ID-a"):8080
curl -sf --max-time 2 -o /dev/null "http://$DIRECT/healthz" || DIRECT=$PORT
BIG=$(node -e 'console.log(JSON.stringify({inputs: Array.from({length: 256}, (_, i) => `sentence ${i} `.repeat(40))}))')
{ rpc "$DIRECT" embed "$BIG" "$KEY" >"$WORK/inflight.json" 2>&1 || echo "(curl exit $?)" >>"$WORK/inflight.json"
  date +%s.%N >"$WORK/inflight.end"; } &
INFLIGHT=$!
# The request is sent and being worked on: the largest embed (embedBatchLimit, 256 inputs of 128 tokens) takes
# seconds on 2 cores, the stop follows its sending by a fraction of one.
sleep 0.3
t=$(date +%s.%N)
docker stop -t "$GRACE" "$RUN_ID-a" >/dev/null
STOPPED=$(since "$t")
wait "$INFLIGHT"
if grep -q '(curl exit' "$WORK/inflight.json"; then
  fail "the request in flight at SIGTERM was not answered in full: $(wc -c <"$WORK/inflight.json") bytes, then $(tail -c 120 "$WORK/inflight.json")"
fi
LATE=$(awk -v a="$t" -v b="$(cat "$WORK/inflight.end")" 'BEGIN { printf "%.2f", b - a }')
awk -v l="$LATE" 'BEGIN { exit !(l > 0) }' || fail "the 256-input embed finished before SIGTERM was sent: nothing was in flight"
expect "$(cat "$WORK/inflight.json")" 'r.result.vectors.length === 256' \
  "the request in flight at SIGTERM was answered ($LATE s after docker stop began)"
EXIT=$(docker inspect -f '{{.State.ExitCode}}' "$RUN_ID-a")
[ "$EXIT" = 0 ] || fail "exit status $EXIT after SIGTERM"
awk -v s="$STOPPED" -v g="$GRACE" 'BEGIN { exit !(s < g) }' || fail "took $STOPPED s to stop (grace $GRACE s)"
docker logs "$RUN_ID-a" 2>&1 | grep '"shutting down"' >/dev/null || fail "no 'shutting down' in the log"
ok "docker stop (SIGTERM): drained and exited 0 in $STOPPED s (grace $GRACE s)"
docker rm "$RUN_ID-a" >/dev/null

t=$(date +%s.%N)
run_server "$RUN_ID-b"
wait_ready "$RUN_ID-b" "$t" >/dev/null
PORT=$(port_of "$RUN_ID-b")
expect "$(rpc "$PORT" retrieve '{"query":"honey","k":1}' "$KEY")" \
  'r.result.hits.length === 1 && r.result.hits[0].id === "bee#0"' "a new container on the same /data volume has the corpus"
docker stop -t "$GRACE" "$RUN_ID-b" >/dev/null

# ---- compose -------------------------------------------------------------------------------------------------------
if docker compose version >/dev/null 2>&1; then
  COMPOSE_CMD=(docker compose)
elif command -v docker-compose >/dev/null; then
  COMPOSE_CMD=(docker-compose)
elif [ "$(id -u)" -eq 0 ]; then
  say "installing Debian's docker-compose"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker-compose >/dev/null
  COMPOSE_CMD=(docker-compose)
else
  fail "no docker compose"
fi
if have_image "$OFFICIAL_REDIS"; then
  REDIS_IMAGE=$OFFICIAL_REDIS
else
  bash docker/local-images.sh redis
  REDIS_IMAGE=$LOCAL_REDIS
fi
say "checking docker/compose.yaml with $("${COMPOSE_CMD[@]}" version --short 2>/dev/null || echo compose), two replicas, $REDIS_IMAGE"
export RCP_API_KEYS=$KEYS RCP_IMAGE=$IMAGE RCP_REDIS_IMAGE=$REDIS_IMAGE RCP_RATE_LIMIT=1 RCP_PUBLISH=127.0.0.1:
COMPOSE=("${COMPOSE_CMD[@]}" -p "$COMPOSE_PROJECT" -f docker/compose.yaml)
"${COMPOSE[@]}" up -d --no-build --scale rcp=2 >"$WORK/compose.log" 2>&1 || { cat "$WORK/compose.log" >&2; fail "compose up"; }
mapfile -t REPLICAS < <(docker ps -q --filter "label=com.docker.compose.project=$COMPOSE_PROJECT" \
  --filter "label=com.docker.compose.service=rcp")
[ ${#REPLICAS[@]} -eq 2 ] || fail "compose started ${#REPLICAS[@]} replicas, not 2"
t=$(date +%s.%N)
for c in "${REPLICAS[@]}"; do wait_healthy "$c" "$t" >/dev/null; done
ok "compose: Redis and two replicas healthy"
P1=$(port_of "${REPLICAS[0]}")
P2=$(port_of "${REPLICAS[1]}")
# One read per second per caller, one bucket in Redis: the second replica finds it spent by the first.
expect "$(rpc "$P1" retrieve '{"query":"owl","k":1}' "$KEY")" '"result" in r' "compose: replica 1 answers a read"
expect "$(rpc "$P2" retrieve '{"query":"owl","k":1}' "$KEY")" 'r.error && r.error.code === -32011' \
  "compose: replica 2 refuses the same caller's next read (-32011): the budget is shared"
sleep 1.2
expect "$(rpc "$P2" retrieve '{"query":"owl","k":1}' "$KEY")" '"result" in r' "compose: a second later the bucket has refilled"
"${COMPOSE[@]}" stop -t "$GRACE" >/dev/null 2>&1
for c in "${REPLICAS[@]}"; do
  [ "$(docker inspect -f '{{.State.ExitCode}}' "$c")" = 0 ] || fail "compose: replica $c exited $(docker inspect -f '{{.State.ExitCode}}' "$c") on stop"
done
ok "compose: both replicas stopped with exit 0"

say "image $IMAGE: $((SIZE / 1000000)) MB; docker run to ready (first ping) $READY s, to healthy $HEALTHY s; server start to ready $(awk -v r="$READY" -v c="$CREATE" 'BEGIN { printf "%.1f", r - c }') s"
