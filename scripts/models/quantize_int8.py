#!/usr/bin/env python3
"""Makes the int8 build of an embedding model: ONNX Runtime's dynamic quantization.

    quantize_int8.py SRC DST

SRC holds a model as fastembed's user-defined models load it (model.onnx, tokenizer.json,
config.json, special_tokens_map.json, tokenizer_config.json, sentence_bert_config.json). DST
receives the same files with model.onnx's weights quantized to int8 (activations are quantized
on the fly, per batch), which runs ~1.7-2x faster on CPUs and loses little recall
(docs/BENCHMARKS.md, "Indexing speed"). Written to a temporary folder and renamed into place,
so an interrupted run leaves no half model.
"""

import os
import shutil
import sys
import tempfile

from onnxruntime.quantization import QuantType, quantize_dynamic

FILES = [
    "tokenizer.json",
    "config.json",
    "special_tokens_map.json",
    "tokenizer_config.json",
    "sentence_bert_config.json",
]


def main(src, dst):
    parent = os.path.dirname(os.path.abspath(dst))
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".int8-", dir=parent)
    try:
        for name in FILES:
            shutil.copyfile(os.path.join(src, name), os.path.join(staging, name))
        # Per-channel weights keep the small output projections accurate; MatMul and Gather
        # (the embedding tables) are what dominate time and size.
        quantize_dynamic(
            os.path.join(src, "model.onnx"),
            os.path.join(staging, "model.onnx"),
            weight_type=QuantType.QInt8,
            per_channel=True,
        )
        if os.path.exists(dst):
            shutil.rmtree(dst)
        os.rename(staging, dst)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    size = os.path.getsize(os.path.join(dst, "model.onnx")) / 1e6
    print(f"int8 model written to {dst} ({size:.1f} MB)")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
