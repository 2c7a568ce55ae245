#!/usr/bin/env python3
"""Scores code models on held-out (doc → code) pairs: recall@10 and MRR@10 of each query's own
code among every pair's code, semantic only.

    eval_code_model.py --pairs DIR/val.jsonl[.gz] MODEL_DIR [MODEL_DIR ...] [--json OUT]

Each MODEL_DIR is an ONNX model folder as zblade installs it (model.onnx, tokenizer.json; the
int8 one setup installs, or build_bert_onnx.py's float one). Queries are read up to 64 tokens
and code up to 256, mean pooled, as the product embeds them. This is the held-out-packages
figure of docs/SEARCH.md ("How the code model is made"); the code-search benchmark measures
the model through the product.
"""
import argparse
import gzip
import json
import os
import sys

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer


def read_pairs(path):
    opener = gzip.open if path.endswith(".gz") else open
    pairs = []
    with opener(path, "rt") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                pair = json.loads(line)
                pairs.append((pair["query"], pair["code"]))
            except (ValueError, KeyError) as e:
                sys.exit(f"{path}:{number}: not a pair with `query` and `code` ({e})")
    return pairs


def embed(folder, texts, max_length, batch=32):
    tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    tok.enable_truncation(max_length=max_length)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    session = ort.InferenceSession(os.path.join(folder, "model.onnx"), providers=["CPUExecutionProvider"])
    inputs = {i.name for i in session.get_inputs()}
    out = []
    # Sorted by length so a batch pads little; put back in order afterwards.
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    for start in range(0, len(order), batch):
        chunk = [texts[i] for i in order[start:start + batch]]
        enc = tok.encode_batch(chunk)
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = session.run(None, feed)[0]
        pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        out.append(pooled / np.linalg.norm(pooled, axis=1, keepdims=True))
    vectors = np.concatenate(out)
    result = np.empty_like(vectors)
    result[order] = vectors
    return result


def score(folder, pairs):
    queries = embed(folder, [q for q, _ in pairs], 64)
    code = embed(folder, [c for _, c in pairs], 256)
    sims = queries @ code.T
    own = sims[np.arange(len(pairs)), np.arange(len(pairs))]
    ranks = (sims > own[:, None]).sum(1)
    return {
        "n": len(pairs),
        "recall@10": round(float((ranks < 10).mean()), 4),
        "mrr@10": round(float(np.where(ranks < 10, 1.0 / (ranks + 1), 0.0).mean()), 4),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", required=True, help="held-out pairs (split_pairs.py's val.jsonl, or .jsonl.gz)")
    ap.add_argument("models", nargs="+", help="model folders")
    ap.add_argument("--json", help="also write the scores here")
    args = ap.parse_args()
    pairs = read_pairs(args.pairs)
    scores = {}
    for folder in args.models:
        scores[folder] = score(folder, pairs)
        print(folder, scores[folder], flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(scores, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
