#!/usr/bin/env bash
# Installs the Node packages of the server's client tests (the official
# `openai` SDK, version pinned by tests/js/package.json and package-lock.json)
# into DEST/node_modules (default DEST: build/node). Idempotent: a no-op when
# the pinned version is already there. Needs `node` and `npm` (scripts/setup.sh
# installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-build/node}
want=$(node -e 'console.log(require("./tests/js/package-lock.json").packages["node_modules/openai"].version)')
have=$(node -e 'try { console.log(require(process.argv[1] + "/node_modules/openai/package.json").version) } catch { console.log("") }' "$(realpath -m "$dest")")
if [ "$have" = "$want" ]; then
  exit 0
fi
mkdir -p "$dest"
cp tests/js/package.json tests/js/package-lock.json "$dest"/
echo "[node_deps] installing openai@$want into $dest"
npm ci --prefix "$dest" --no-audit --no-fund --loglevel=error
