#!/usr/bin/env bash
# `npm run up`: from a fresh clone to the running local fleet. Prepares the workspace, then hands over to the
# launcher (tools/dev/src/fleet.ts), which runs until Ctrl-C. Arguments go to the launcher:
#   npm run up -- --port-offset 100      npm run up -- --help
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source tools/dev/prepare.sh
step "starting the fleet"
exec node --import tsx tools/dev/src/fleet.ts "$@"
