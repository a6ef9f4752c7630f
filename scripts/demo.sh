#!/usr/bin/env bash
# The main job's demo: inspect the small real model from ../shared/testdata and
# generate from it with the off-graph cache. Pass a model path to use another.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/offgraph ] || scripts/setup.sh
MODEL=${1:-${OFFGRAPH_TESTDATA:-../shared/testdata}/models/stories260K/stories260K.gguf}
if [ ! -e "$MODEL" ]; then
  echo "demo: no model at $MODEL; run: scripts/demo.sh /path/to/model.gguf (or an HF checkpoint directory)" >&2
  exit 1
fi
build/offgraph inspect "$MODEL"
echo
build/offgraph run --model "$MODEL" --prompt "Once upon a time" --max-new-tokens 120 --chat auto
