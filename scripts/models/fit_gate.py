#!/usr/bin/env python3
"""Fits the relevance gate's logistic model (crates/zblade-context/src/gate.rs) on the tuning
split only, from the features the gate benchmark writes:

    ZBLADE_GATE_FEATURES=/tmp/gate.csv cargo bench -p zblade-engine --bench relevance_gate
    "$ZBLADE_PYTHON" scripts/models/fit_gate.py /tmp/gate.csv   # scripts/env.sh sets it

Positives: answerable questions (weighted by the evidence recall of their ungated 2,000-token
pack: a question whose pack holds no evidence loses nothing when gated). Negatives: foreign
questions and everyday coding prompts asked of a LoCoMo project. The code project's prompts are
left out: whether code memory helps them is not labelled. Features: the semantic margin, known
words, best cover and whether the prompt names something the project never mentions. Two
models: with vectors, and words only (for keyword-only projects). The bias is then moved so
that, at the default floor 0.5, the gate keeps at least --keep (0.98) of the tuning split's
evidence.
Prints the constants to paste into gate.rs and the tuning split's rates. Needs only NumPy.
"""
import argparse
import csv

import numpy as np


def load(path):
    rows = []
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["split"] != "tune" or r["kind"] == "everyday_code":
                continue
            num = lambda k: float(r[k]) if r[k] != "" else np.nan
            margin = np.nan
            if r["semantic_best"] and r["null_mean"]:
                margin = (num("semantic_best") - num("null_mean")) / num("null_spread")
            rows.append((r["kind"], margin, num("known_words"), num("best_cover"), num("recall_2000"), num("unknown_name")))
    return rows


def fit(x, y, w, l2=1e-3, steps=5000, lr=0.5):
    """Weighted logistic regression by gradient descent on standardised features."""
    mean, std = x.mean(axis=0), x.std(axis=0) + 1e-9
    z = (x - mean) / std
    z = np.hstack([np.ones((len(z), 1)), z])
    beta = np.zeros(z.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-z @ beta))
        grad = z.T @ (w * (p - y)) / w.sum() + l2 * np.r_[0, beta[1:]]
        beta -= lr * grad
    # Back to the raw features' scale.
    coef = beta[1:] / std
    bias = beta[0] - (coef * mean).sum()
    return bias, coef


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("features")
    # The target is 0.97 of the ungated evidence on conversations never tuned on; one point of
    # headroom on the tuning split for the difference between conversations.
    ap.add_argument("--keep", type=float, default=0.98, help="share of tuning evidence recall to keep")
    args = ap.parse_args()
    rows = load(args.features)
    kinds = np.array([r[0] for r in rows])
    margin = np.array([r[1] for r in rows])
    known = np.array([r[2] for r in rows])
    known = np.where(np.isnan(known), 1.0, known)  # no searchable word: as the gate does
    cover = np.nan_to_num(np.array([r[3] for r in rows]))
    recall = np.nan_to_num(np.array([r[4] for r in rows]))
    unknown = np.nan_to_num(np.array([r[5] for r in rows]))
    positive = kinds == "answerable"
    y = positive.astype(float)
    # Each side weighs the same in all; positives by the evidence they would lose.
    w = np.where(positive, recall, 1.0)
    w = np.where(positive, w / max(w[positive].sum(), 1e-9), w / max((~positive).sum(), 1))
    for name, features in [
        ("WITH_VECTORS", np.c_[np.nan_to_num(margin), known, cover, unknown]),
        ("WORDS_ONLY", np.c_[np.zeros(len(known)), known, cover, unknown]),
    ]:
        bias, coef = fit(features, y, w)
        score = features @ coef
        # Move the bias so that the floor 0.5 (score + bias >= 0) keeps --keep of the evidence.
        order = np.argsort(score[positive])
        kept = np.cumsum(recall[positive][order][::-1])[::-1] / max(recall[positive].sum(), 1e-9)
        can = np.where(kept >= args.keep)[0]
        threshold = score[positive][order][can.max()] if len(can) else score.min()
        bias = -threshold + 1e-6
        passed = score + bias >= 0
        print(
            f"const {name}: Model = Model {{ bias: {bias:.4f}, semantic: {coef[0]:.4f}, "
            f"known: {coef[1]:.4f}, cover: {coef[2]:.4f}, unknown_name: {coef[3]:.4f} }};"
        )
        for kind in ["answerable", "foreign", "everyday_locomo"]:
            sel = kinds == kind
            if kind == "answerable":
                kept_recall = recall[sel & passed].sum() / max(recall[sel].sum(), 1e-9)
                print(f"  {kind}: passes {passed[sel].mean():.3f}, evidence kept {kept_recall:.3f}")
            else:
                print(f"  {kind}: passes {passed[sel].mean():.3f} (n={sel.sum()})")


if __name__ == "__main__":
    main()
