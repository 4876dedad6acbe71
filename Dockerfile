# Cairn service image: one Dockerfile for every service, the build argument SERVICE selects which.
#
# Build from the repository root (the build context is the whole pnpm workspace):
#   docker build --build-arg SERVICE=signer -t cairn-signer .
#
# SERVICE must be a service of packages/config/src/fleet.ts (the build stops otherwise). The image carries no
# port of its own: a service listens on its default ports from fleet.ts, or on GRPC_PORT / OPS_PORT / HTTP_PORT
# when set (the chart sets them). skaffold.yaml builds one image per service from this file; a new service is one
# artifact entry there (test/deployment.test.ts checks that the fleet, skaffold and the chart agree).
ARG SERVICE

# ---- build: install the workspace, generate protobuf code, bundle the service, prune to prod deps ----
FROM node:20-bookworm-slim AS build
ARG SERVICE
ENV CI=true
RUN test -n "${SERVICE}" || { echo 'build with --build-arg SERVICE=<a service of packages/config/src/fleet.ts>' >&2; exit 1; }
# python3/make/g++ only for dependencies that compile a native addon at install (pnpm-workspace.yaml's
# onlyBuiltDependencies); this stage is thrown away, so they never reach the runtime image.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ ca-certificates \
 && rm -rf /var/lib/apt/lists/*
RUN npm i -g pnpm@10.34.9
WORKDIR /repo
# Fetch every package in the lockfile into the store first: this layer is reused until the lockfile changes.
COPY pnpm-lock.yaml pnpm-workspace.yaml package.json ./
RUN pnpm fetch
COPY . .
RUN pnpm install --frozen-lockfile --offline
RUN pnpm gen
RUN node tools/dev/build.mjs "${SERVICE}"
# A self-contained folder: package.json, dist/ and production node_modules. Hoisted (flat) node_modules so
# that npm packages imported by the bundled @cairn/* workspace code resolve from dist/main.js too.
RUN pnpm --filter "@cairn/${SERVICE}" deploy --prod --legacy --offline --config.node-linker=hoisted /out \
 && rm -rf /out/dist \
 && cp -R "services/${SERVICE}/dist" /out/dist \
 && test -f /out/dist/main.js
# The service's default ops port, for the HEALTHCHECK when OPS_PORT is not set (fails for a name not in the fleet).
RUN node --import tsx -e "import('./packages/config/src/fleet.ts').then(({ DEFAULT_PORTS }) => process.stdout.write(String(DEFAULT_PORTS[process.argv[1]].ops)))" "${SERVICE}" > /out/ops-port

# ---- runtime: only the deployed folder, run as the unprivileged `node` user (uid 1000) ----
FROM node:20-bookworm-slim AS runtime
ARG SERVICE
LABEL org.opencontainers.image.title="cairn-${SERVICE}" \
      org.opencontainers.image.description="Cairn ${SERVICE} service"
# GRPC_HOST: bind on all interfaces inside a container (the 127.0.0.1 default is for local dev).
ENV NODE_ENV=production \
    GRPC_HOST=0.0.0.0
WORKDIR /app
# Owned by root and only readable by `node`: the running service cannot rewrite its own code.
COPY --from=build /out/ /app/
USER node
# Liveness from the ops server; slim images have no curl, so use node's own fetch.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "const port = process.env.OPS_PORT || require('fs').readFileSync('/app/ops-port', 'utf8'); fetch('http://127.0.0.1:' + port + '/healthz', { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node is PID 1 and handles SIGTERM itself: it drains within SHUTDOWN_GRACE_MS, then exits.
STOPSIGNAL SIGTERM
CMD ["node", "dist/main.js"]
