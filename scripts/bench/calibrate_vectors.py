#!/usr/bin/env python3
"""Measures the shape of real sentence embeddings, for the benchmarks' synthetic vectors.

    calibrate_vectors.py MODEL_DIR OUT

A million-chunk benchmark cannot embed its chunks with the real model (40 chunks/s on two
cores: seven hours), so it draws vectors. Drawn from random directions in all 384 dimensions,
they are the hardest case there is for an approximate index (every direction is as likely as
every other, and a vector's tenth-nearest neighbour is hardly further than its first), and
nothing like what a sentence model writes: its vectors share a common direction and vary
along a few dozen others.

This script embeds real prose - this repository's docs and commit messages, written by people
and agents about this project - with MODEL_DIR (zblade's default model), and writes to OUT the
mean vector and the 128 leading principal components of those embeddings, each scaled by the
square root of its variance: 129 rows of 384 little-endian f32. The benchmark's generator
(`CalibratedVectors` in crates/zblade-engine/benches/common/vectors.rs) draws topic centres
around the mean along those components and members around each centre. Its three settings
(vectors per topic, a member's spread, the mean's weight) are fitted here: the grid point
whose nearest-neighbour similarities (first and tenth), mean pairwise similarity and
effective dimension, at the real set's size, come closest to the real embeddings'. The script
prints both sets of figures; docs/BENCHMARKS.md quotes them.
"""

import glob
import itertools
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

COMPONENTS = 128
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def real_texts():
    texts = []
    for path in sorted(glob.glob(f"{REPO}/docs/*.md") + [f"{REPO}/README.md"]):
        with open(path, encoding="utf-8", errors="replace") as f:
            texts += [p.strip() for p in f.read().split("\n\n") if len(p.strip()) > 80]
    log = subprocess.run(["git", "-C", REPO, "log", "--format=%B%x00"], capture_output=True, text=True, check=True)
    texts += [m.strip() for m in log.stdout.split("\0") if len(m.strip()) > 40]
    rng = np.random.default_rng(1)
    rng.shuffle(texts)
    return texts[:1500]


def embed(model_dir, texts):
    tokenizer = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
    tokenizer.enable_truncation(256)
    tokenizer.enable_padding()
    session = ort.InferenceSession(f"{model_dir}/model.onnx")
    inputs = {i.name for i in session.get_inputs()}
    out = []
    for start in range(0, len(texts), 32):
        encoded = tokenizer.encode_batch(texts[start : start + 32])
        ids = np.array([e.ids for e in encoded])
        mask = np.array([e.attention_mask for e in encoded])
        feed = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        hidden = session.run(None, feed)[0]
        v = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        out.append(v / np.linalg.norm(v, axis=1, keepdims=True))
    return np.concatenate(out).astype(np.float64)


def shape(x):
    """First and tenth nearest-neighbour similarity, mean pairwise similarity, effective dimension."""
    sims = x @ x.T
    np.fill_diagonal(sims, -1)
    nearest = np.sort(sims, 1)[:, ::-1]
    variances = np.linalg.eigvalsh(np.cov((x - x.mean(0)).T))
    return np.array(
        [
            nearest[:, 0].mean(),
            nearest[:, 9].mean(),
            sims[sims > -1].mean(),
            variances.sum() ** 2 / (variances**2).sum(),
        ]
    )


def draw(mean, scaled, n, per_topic, spread, mean_weight, rng):
    """The generator of vectors.rs, in numpy: centres around the mean, members around them."""
    dim = len(mean)
    topics = max(n // per_topic, 20)
    centres = mean_weight * mean + rng.normal(size=(topics, len(scaled))) @ scaled
    x = centres[rng.integers(0, topics, n)] + spread * (rng.normal(size=(n, len(scaled))) @ scaled)
    assert x.shape[1] == dim
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def main(model_dir, out_path):
    texts = real_texts()
    real = embed(model_dir, texts)
    mean = real.mean(0)
    variances, axes = np.linalg.eigh(np.cov((real - mean).T))
    order = np.argsort(variances)[::-1][:COMPONENTS]
    scaled = (axes[:, order] * np.sqrt(np.clip(variances[order], 0, None))).T  # COMPONENTS x dim
    kept = variances[order].sum() / variances.sum()
    target = shape(real)
    labels = ["nearest", "10th nearest", "any pair", "effective dimension"]
    scale = np.array([1, 1, 1, 100])
    best = None
    for per_topic, spread, mean_weight in itertools.product([10, 20, 30], [0.9, 1.1, 1.3], [1.2, 1.4, 1.7]):
        drawn = shape(draw(mean, scaled, len(real), per_topic, spread, mean_weight, np.random.default_rng(3)))
        error = np.abs((drawn - target) / scale).sum()
        if best is None or error < best[0]:
            best = (error, per_topic, spread, mean_weight, drawn)
    _, per_topic, spread, mean_weight, drawn = best
    print(f"{len(texts)} real texts embedded; {COMPONENTS} components keep {kept:.1%} of their variance")
    for label, r, d in zip(labels, target, drawn):
        print(f"  {label:>20}: real {r:.3f}  drawn {d:.3f}")
    print(f"fitted: {per_topic} vectors per topic, spread {spread}, mean weight {mean_weight}")
    rows = np.vstack([mean[None, :], scaled]).astype("<f4")
    folder = os.path.dirname(os.path.abspath(out_path))
    with tempfile.NamedTemporaryFile(dir=folder, delete=False) as f:
        f.write(rows.tobytes())
    os.replace(f.name, out_path)
    print(f"wrote {out_path} ({rows.shape[0]} rows of {rows.shape[1]})")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
