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
    worst = agreement(src, dst)
    print(f"int8 model written to {dst} ({size:.1f} MB; cosine to the float model >= {worst:.3f})")


def agreement(src, dst):
    """The lowest cosine between the float and the int8 model's embeddings of sample texts
    (the float model was itself checked against a NumPy forward pass when it was built); a
    quantization that broke the model stops here."""
    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer

    texts = [
        "How do we refresh an expired JWT?",
        "src/glob.rs: Glob::new\npub fn new(glob: &str) -> Result<Glob, Error> {\n    GlobBuilder::new(glob).build()\n}",
        "parse a glob pattern into a regular expression",
        "The cat sat on the warm windowsill.",
    ]
    tok = Tokenizer.from_file(os.path.join(src, "tokenizer.json"))
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    tok.enable_truncation(max_length=256)
    enc = tok.encode_batch(texts)
    ids = np.array([e.ids for e in enc], dtype=np.int64)
    mask = np.array([e.attention_mask for e in enc], dtype=np.int64)

    def embed(folder):
        session = ort.InferenceSession(os.path.join(folder, "model.onnx"), providers=["CPUExecutionProvider"])
        out = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
        pooled = (out * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

    worst = float(((embed(src) * embed(dst)).sum(1)).min())
    if worst < 0.95:
        sys.exit(f"the int8 model disagrees with the float one: cosine {worst:.3f} < 0.95")
    return worst


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
