#!/usr/bin/env bash
# Cross-builds offgraph for AArch64 Linux into build-aarch64/ from an x86-64
# Debian host: installs what that needs (idempotent, non-interactive), writes
# nothing outside build-aarch64/ but the packages, and builds the command,
# og-synth and the kernel unit tests (or the targets given as arguments, e.g.
# `scripts/cross-aarch64.sh unit_tests`; `ci`: what scripts/test.sh runs
# under qemu, the kernel and KV libraries and their tests; `deps`: only the
# packages, nothing built). scripts/test-aarch64.sh runs them
# under qemu. docs/contributing.md says what this does and does not verify.
#
# Compiles hold /tmp/offgraph-build.lock, as scripts/build.sh does, one stage
# (a few libraries or one program) at a time, so other builds on the machine
# interleave instead of waiting for the whole cross build. JOBS (default 2)
# compilers per stage.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-2}
BUILD=${BUILD:-build-aarch64}  # a path under the repository root
DEPS=$PWD/$BUILD/deps
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
APT=($SUDO env DEBIAN_FRONTEND=noninteractive apt-get)

# ---- packages: the cross compiler, qemu, the arm64 -dev packages the build links
# (nlohmann-json, cppzmq and msgpack are headers the host's packages already give).
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "[cross] dpkg --add-architecture arm64"
  $SUDO dpkg --add-architecture arm64
  "${APT[@]}" update -qq
fi
PKGS=(g++-aarch64-linux-gnu qemu-user-static ninja-build cmake pkg-config libc6:arm64
      libpcre2-dev:arm64 libicu-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64
      libzmq3-dev:arm64 libcpp-httplib-dev:arm64
      libpng-dev:arm64 libjpeg-dev:arm64 libwebp-dev:arm64 libgif-dev:arm64)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "[cross] installing: ${missing[*]}"
  "${APT[@]}" update -qq
  "${APT[@]}" install -y -qq --no-install-recommends "${missing[@]}"
fi

# ---- sentencepiece: Debian's libsentencepiece0 and -dev are not Multi-Arch:
# same, so their arm64 builds cannot be installed beside the amd64 ones the
# native build needs. They are unpacked into build-aarch64/deps instead, with
# a .pc file pointing there (the programs find the library by their RPATH).
if [ ! -f "$DEPS/pkgconfig/sentencepiece.pc" ]; then
  echo "[cross] unpacking libsentencepiece0:arm64 and libsentencepiece-dev:arm64 into $DEPS"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && apt-get download libsentencepiece0:arm64 libsentencepiece-dev:arm64 2>/dev/null) ||
    { "${APT[@]}" update -qq && (cd "$tmp" && apt-get download libsentencepiece0:arm64 libsentencepiece-dev:arm64); }
  rm -rf "$DEPS/root" && mkdir -p "$DEPS/root" "$DEPS/pkgconfig"
  for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$DEPS/root"; done
  sed -e "s|^prefix=.*|prefix=$DEPS/root/usr|" \
      "$DEPS/root/usr/lib/aarch64-linux-gnu/pkgconfig/sentencepiece.pc" > "$DEPS/pkgconfig/sentencepiece.pc.tmp"
  mv "$DEPS/pkgconfig/sentencepiece.pc.tmp" "$DEPS/pkgconfig/sentencepiece.pc"
fi

# `deps`: only the above (scripts/test.sh runs it in the background while the
# Release tree builds: downloads and unpacking, no compiler).
if [ "${1:-}" = deps ]; then
  echo "[cross] packages and sentencepiece in place"
  exit 0
fi

# ---- configure once (under the lock: cmake's compiler checks are compiles too).
exec 9>/tmp/offgraph-build.lock
locked() { flock 9; "$@"; local rc=$?; flock -u 9; return $rc; }
if [ ! -f "$BUILD/build.ninja" ]; then
  echo "[cross] configuring $BUILD"
  locked env PKG_CONFIG_PATH="$DEPS/pkgconfig" cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/aarch64-linux-gnu.cmake" \
    -DCMAKE_DISABLE_FIND_PACKAGE_pybind11=ON >/dev/null
fi

# ---- build in stages, the lock released between them.
if [ "${1:-}" = ci ]; then
  # What CI runs under qemu (scripts/test-aarch64.sh with CI=1): the kernel and
  # KV libraries and their unit tests, a few minutes instead of ~15.
  stages=(og_kernels og_kv test_kernels test_kv)
elif [ $# -gt 0 ]; then
  stages=("$@")
else
  stages=(og_kernels og_format og_tokenizer og_model og_runtime og_server og_cli og_shared offgraph og-synth test_kernels)
fi
t0=$(date +%s)
for s in "${stages[@]}"; do
  echo "[cross] building $s"
  locked cmake --build "$BUILD" -j "$JOBS" --target "$s"
done
echo "[cross] built ${stages[*]} in $BUILD/ in $(( $(date +%s) - t0 )) s"
