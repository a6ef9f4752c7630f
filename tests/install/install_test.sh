#!/usr/bin/env bash
# Installs the build into a temporary prefix and builds the examples against
# that prefix only: examples/c through pkg-config, examples/cpp through
# find_package(offgraph); runs them and the installed Python module on the
# real model and checks the greedy reference text.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR MODEL
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd) model=$3
[ -f "$model" ] || { echo "the test model is missing: $model"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
expected="Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She wanted to play with it, but it was too high.
Lily"

cmake --install "$build" --prefix "$prefix" >/dev/null
# Only the public headers are installed.
headers=$(cd "$prefix/include" && find . -type f | sort | tr '\n' ' ')
[ "$headers" = "./offgraph/offgraph.h ./offgraph/offgraph.hpp " ] || { echo "installed headers: $headers"; exit 1; }

# C through pkg-config (nothing from the build tree on any path).
export PKG_CONFIG_PATH=$(dirname "$(find "$prefix" -name offgraph.pc)")
libdir=$(pkg-config --variable=libdir offgraph)
[ -e "$libdir/liboffgraph.so.0" ] || { echo "no liboffgraph.so.0 in $libdir"; exit 1; }
cc -std=c11 -Wall -Wextra -Werror "$src/examples/c/generate.c" $(pkg-config --cflags --libs offgraph) \
   -Wl,-rpath,"$libdir" -o "$tmp/generate_c"
out=$("$tmp/generate_c" "$model" 2>"$tmp/c.err") || { cat "$tmp/c.err"; exit 1; }
[ "$out" = "$expected" ] || { echo "C example printed: $out"; cat "$tmp/c.err"; exit 1; }
grep -q "expected error: .*token id 100000" "$tmp/c.err" || { cat "$tmp/c.err"; exit 1; }
echo "[install] C example through pkg-config: ok"

# The library is the C API alone: linking it pulls in none of the server's
# dependencies (libzmq, cpp-httplib's, ...), neither through ldd nor pkg-config.
if ldd "$libdir/liboffgraph.so.0" | grep -Ei 'libzmq|libsodium|libpgm|libnorm|libgssapi' ; then
  echo "liboffgraph.so.0 links a server dependency:"; ldd "$libdir/liboffgraph.so.0"; exit 1
fi
if pkg-config --libs --static offgraph | grep -qi zmq; then echo "offgraph.pc names zmq"; exit 1; fi
nm -D --defined-only "$libdir/liboffgraph.so.0" | grep -q og_cli_main && { echo "the library exports og_cli_main"; exit 1; }
echo "[install] liboffgraph.so without the command line or the server's dependencies: ok"

# The installed command (the command line and the server, linked into the program).
out=$(cd "$tmp" && env -u LD_LIBRARY_PATH "$prefix/bin/offgraph" run --model "$model" --prompt "Once upon a time" \
      -n 60 --temp 0 2>"$tmp/cli.err") || { cat "$tmp/cli.err"; exit 1; }
[ "Once upon a time$out" = "$expected" ] || { echo "installed offgraph printed: $out"; exit 1; }
echo "[install] the installed offgraph command: ok"

# C++ through find_package, with g++ and with clang++ (whose default standard,
# C++14, lacks the std::string_view that offgraph.hpp uses: the imported
# target must ask for C++17 itself; the example's CMakeLists sets no standard).
want="$expected
engine: same (length)
error: cannot rewind to 100 tokens: the history holds 65"
for cxx in g++ clang++; do
  command -v "$cxx" >/dev/null || { echo "$cxx is missing: scripts/setup.sh installs it"; exit 1; }
  cmake -S "$src/examples/cpp" -B "$tmp/cpp-$cxx" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
        -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_RPATH="$libdir" >/dev/null
  cmake --build "$tmp/cpp-$cxx" >"$tmp/cpp-$cxx.log" 2>&1 || { cat "$tmp/cpp-$cxx.log"; exit 1; }
  out=$("$tmp/cpp-$cxx/generate" "$model")
  [ "$out" = "$want" ] || { echo "C++ example ($cxx) printed: $out"; exit 1; }
done
echo "[install] C++ example through find_package (g++, clang++): ok"

# The installed Python module.
pydir=$(dirname "$(find "$prefix" -path '*dist-packages/offgraph/__init__.py')")
if [ "$pydir" = "." ]; then
  [ -z "${OG_EXPECT_PYTHON:-}" ] || { echo "the Python module was not installed"; exit 1; }
  echo "[install] Python module: not built (no pybind11)"
else
  out=$(cd "$tmp" && PYTHONPATH=$(dirname "$pydir") /usr/bin/python3 "$src/examples/python/generate.py" "$model" 2>"$tmp/py.err") ||
    { cat "$tmp/py.err"; exit 1; }
  [ "$out" = "$expected" ] || { echo "installed Python module printed: $out"; exit 1; }
  # python3 -m offgraph runs the installed program (found relative to the package).
  out=$(cd "$tmp" && env -u LD_LIBRARY_PATH PYTHONPATH=$(dirname "$pydir") /usr/bin/python3 -m offgraph run \
        --model "$model" --prompt "Once upon a time" -n 60 --temp 0 2>"$tmp/pym.err") || { cat "$tmp/pym.err"; exit 1; }
  [ "Once upon a time$out" = "$expected" ] || { echo "installed python3 -m offgraph printed: $out"; exit 1; }
  ldd "$pydir"/_offgraph*.so | grep -qi zmq && { echo "the Python module links zmq"; exit 1; }
  echo "[install] Python module: ok"
fi
