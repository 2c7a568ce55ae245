#!/usr/bin/env python3
"""Writes a model with ONNX Runtime's graph optimizations already applied, for the package.

    optimize_graph.py SRC DST

SRC is a model directory as fastembed's user-defined models load it (model.onnx and its
tokenizer and config files). DST receives every file of SRC, with model.onnx replaced by the
graph ONNX Runtime makes of it at the "extended" level: attention, layer norms and GELU fused
into single operators. ONNX Runtime redoes that work each time it opens a model (about 10 ms
of every cold `zblade context` with all-MiniLM-L6-v2 int8 on two cores); opening the saved
result finds nothing left to fuse. The "extended" level is the highest whose result does not
depend on the CPU it was made on (the "all" level adds layouts for this machine's vector
instructions), and the fused operators need this ONNX Runtime version or a later one: the
package ships the runtime of the same wheel (scripts/package.sh).

The embeddings of sample texts must agree with SRC's (cosine >= 0.9999) or nothing is
written. Written to a temporary folder and renamed into place.
"""

import os
import shutil
import sys
import tempfile

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

SAMPLES = [
    "How do we refresh an expired JWT?",
    "src/glob.rs: Glob::new\npub fn new(glob: &str) -> Result<Glob, Error> {\n    GlobBuilder::new(glob).build()\n}",
    "parse a glob pattern into a regular expression",
    "The cat sat on the warm windowsill.",
]


def main(src, dst):
    parent = os.path.dirname(os.path.abspath(dst))
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".optimized-", dir=parent)
    try:
        for name in os.listdir(src):
            if name != "model.onnx" and os.path.isfile(os.path.join(src, name)):
                shutil.copyfile(os.path.join(src, name), os.path.join(staging, name))
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        options.optimized_model_filepath = os.path.join(staging, "model.onnx")
        ort.InferenceSession(os.path.join(src, "model.onnx"), options, providers=["CPUExecutionProvider"])
        worst = agreement(src, staging)
        if worst < 0.9999:
            sys.exit(f"{src}: the optimized graph disagrees with the model: cosine {worst:.6f} < 0.9999")
        if os.path.exists(dst):
            shutil.rmtree(dst)
        os.rename(staging, dst)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    print(f"{dst}: optimized graph written (cosine to {src} >= {worst:.6f})")


def agreement(src, dst):
    """The lowest cosine between the two models' mean-pooled embeddings of SAMPLES."""
    tok = Tokenizer.from_file(os.path.join(src, "tokenizer.json"))
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    tok.enable_truncation(max_length=256)
    enc = tok.encode_batch(SAMPLES)
    ids = np.array([e.ids for e in enc], dtype=np.int64)
    mask = np.array([e.attention_mask for e in enc], dtype=np.int64)

    def embed(folder):
        # Opened as zblade opens a model (fastembed asks for every optimization).
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        session = ort.InferenceSession(os.path.join(folder, "model.onnx"), options, providers=["CPUExecutionProvider"])
        feeds = {"input_ids": ids, "attention_mask": mask}
        if any(i.name == "token_type_ids" for i in session.get_inputs()):
            feeds["token_type_ids"] = np.zeros_like(ids)
        out = session.run(None, feeds)[0]
        pooled = (out * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

    return float(((embed(src) * embed(dst)).sum(1)).min())


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
