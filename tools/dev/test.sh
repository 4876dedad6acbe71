#!/usr/bin/env bash
# `npm test`: prepare the workspace (the fleet tests run the bundles), typecheck, then the jest suites against
# Postgres, Redis and NATS on this machine. Arguments go to jest:
#   npm test -- test/fleet-process.test.ts
# A run that includes test/images.test.ts first builds the service images (tools/dev/images.sh: Docker's engine,
# installed and started when missing, and the base image are made on the way).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source tools/dev/prepare.sh
source tools/dev/system-packages.sh
ensure_system_packages softhsm2 chromium
step "typecheck"
pnpm typecheck
step "format (prettier --check; fix with pnpm format)"
pnpm exec prettier --check . --log-level warn
step "lint (buf lint: proto style and doc comments; eslint: typescript-eslint and the service interior boundaries)"
pnpm lint
step "helm (test/deployment.test.ts renders charts/cairn with it; cached in .cairn/bin)"
node tools/dev/helm.mjs
mkdir -p tools/out
# The images' smoke (test/images.test.ts) starts the fleet from the service images: build them first when this
# run includes it (a full run, or the file named). Cached layers make a rebuild with no change quick.
if NODE_OPTIONS=--experimental-vm-modules pnpm exec jest -c jest.config.js --listTests "$@" 2>/dev/null |
  grep -q '/test/images\.test\.ts$'; then
  source tools/dev/images.sh
  build_service_images
fi
step "jest"
status=0
NODE_OPTIONS=--experimental-vm-modules pnpm exec jest -c jest.config.js --ci --json --outputFile=tools/out/jest-results.json "$@" || status=$?
# One plain closing line with the counts, whatever reads the log.
node -e '
  const r = JSON.parse(require("fs").readFileSync("tools/out/jest-results.json", "utf8"));
  const skipped = r.numPendingTests + r.numTodoTests;
  console.log(`\n${r.numPassedTests} passed, ${r.numFailedTests + r.numRuntimeErrorTestSuites} failed` + (skipped ? `, ${skipped} skipped` : ""));
' || true
exit "$status"
