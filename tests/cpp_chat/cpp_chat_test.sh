#!/usr/bin/env bash
# offgraph.hpp's chat built with g++ and with clang++ (C++17, warnings as
# errors) against the built liboffgraph.so, run on a scripted Qwen 3 model
# written by og-synth (tests/e2e/data/script_qwen3_tool.json).
# Usage: cpp_chat_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/og-synth" --family qwen3 --format gguf --out "$tmp/tool.gguf" \
  --script "$src/tests/e2e/data/script_qwen3_tool.json" \
  --chat-template "$src/tests/template/data/templates/Qwen-Qwen3-0.6B.jinja" >/dev/null
want='tool_calls get_weather {"city":"Paris"}
stop [The user wants the weather.] {"weather":"sunny"}
error: '"'"'tool_choice'"'"' names the function '"'"'no_such_tool'"'"', which is not in '"'"'tools'"'"''
for cxx in g++ clang++; do
  command -v "$cxx" >/dev/null || { echo "$cxx is missing: scripts/setup.sh installs it"; exit 1; }
  "$cxx" -std=c++17 -Wall -Wextra -Werror -I "$src/include" "$src/tests/cpp_chat/chat_example.cpp" \
    -L "$build" -loffgraph -Wl,-rpath,"$build" -o "$tmp/chat_$cxx"
  out=$("$tmp/chat_$cxx" "$tmp/tool.gguf")
  [ "$out" = "$want" ] || { echo "chat_example ($cxx) printed:"; echo "$out"; exit 1; }
done
echo "[cpp_chat] offgraph.hpp chat with g++ and clang++: ok"
