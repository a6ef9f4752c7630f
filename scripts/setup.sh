#!/usr/bin/env bash
# Installs every Debian package offgraph needs (idempotent, non-interactive)
# and builds what the main job (scripts/demo.sh) runs: `offgraph` and
# `og-synth` in the Release tree build/. The test command (scripts/test.sh)
# builds the rest (tests, benchmarks) and installs the Node packages of the
# server's client tests into build/node (scripts/node_deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(build-essential cmake ninja-build pkg-config git
      libgtest-dev libgmock-dev libbenchmark-dev
      nlohmann-json3-dev libpcre2-dev libsentencepiece-dev libicu-dev
      clang libclang-rt-14-dev python3
      libcpp-httplib-dev curl nodejs python3-jinja2
      pybind11-dev python3-dev python3-numpy python3-pytest python3-jsonschema
      cppzmq-dev libmsgpack-cxx-dev python3-zmq python3-msgpack python3-cbor2
      haproxy prometheus python3-yaml
      libpng-dev libjpeg62-turbo-dev libwebp-dev libgif-dev  # image decoding (src/vision/)
      chromium)  # the chat page's browser test (tests/js/webui_browser_test.mjs), driven by puppeteer-core

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "[setup] installing: ${missing[*]}"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# Debian's npm (a nodejs from elsewhere, e.g. NodeSource, brings its own and conflicts with it).
if ! command -v npm >/dev/null; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends npm
fi

scripts/build.sh offgraph og-synth
