# Sourced by up.sh and test.sh: from a fresh clone (only node and npm installed) to a built workspace.
# Checks Node, installs pnpm and the workspace, generates the protobuf code, bundles the services.

PNPM_VERSION=10.34.9

if [[ -t 1 ]]; then
  step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
else
  step() { printf '\n==> %s\n' "$*"; }
fi

if ! command -v node >/dev/null 2>&1; then
  echo "node is not installed: install Node.js 20 or later (https://nodejs.org), then run this again." >&2
  exit 1
fi
if ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)'; then
  echo "Node.js $(node --version) is too old: Cairn needs Node.js 20 or later." >&2
  exit 1
fi

if ! command -v pnpm >/dev/null 2>&1 || [[ "$(pnpm --version 2>/dev/null)" != 10.* ]]; then
  step "installing pnpm@${PNPM_VERSION}"
  npm install -g "pnpm@${PNPM_VERSION}"
  hash -r
fi

step "pnpm install"
pnpm install --frozen-lockfile
step "pnpm gen (protobuf code, generated, not committed)"
pnpm gen
step "building the services"
node tools/dev/build.mjs
