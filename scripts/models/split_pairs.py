#!/usr/bin/env python3
"""Splits mined (doc → code) pairs into training and validation by package.

    split_pairs.py --pairs DIR/pairs.jsonl --out DIR [--held-out 0.05] [--seed 2026]

Whole packages are held out, never single pairs: a package's functions share names, helpers and
style, so a pair whose neighbours were trained on would flatter the model. The package names
are sorted, shuffled with `random.Random(seed)`, and the first `--held-out` share of them is
validation. Writes OUT/train.jsonl, OUT/val.jsonl and OUT/split.json (how it was split, the
files' digests, the held-out packages), which `ship_code_model.py --split` records in the
shipped model's PROVENANCE.json. zblade-code-v2's split is this one with the defaults.
"""
import argparse
import json
import os
import random

from ship_code_model import sha256


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", required=True, help="mine_code_pairs's pairs.jsonl")
    ap.add_argument("--out", required=True, help="the folder to write train.jsonl, val.jsonl, split.json to")
    ap.add_argument("--held-out", type=float, default=0.05, help="share of packages held out (default 0.05)")
    ap.add_argument("--seed", type=int, default=2026)
    args = ap.parse_args()

    lines = []
    with open(args.pairs) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                package = json.loads(line)["package"]
            except (ValueError, KeyError) as e:
                raise SystemExit(f"{args.pairs}:{number}: not a pair with a `package` field ({e})")
            lines.append((package, line if line.endswith("\n") else line + "\n"))
    packages = sorted({p for p, _ in lines})
    random.Random(args.seed).shuffle(packages)
    held = set(packages[: int(len(packages) * args.held_out)])

    os.makedirs(args.out, exist_ok=True)
    train_path, val_path = os.path.join(args.out, "train.jsonl"), os.path.join(args.out, "val.jsonl")
    with open(train_path, "w") as train, open(val_path, "w") as val:
        for package, line in lines:
            (val if package in held else train).write(line)
    split = {
        "how": f"by package: random.Random({args.seed}).shuffle over the sorted package names, the first "
        f"{args.held_out:.0%} held out; every pair of a held-out package is in validation, none in training",
        "pairs_file_sha256": sha256(args.pairs),
        "train_pairs": sum(1 for p, _ in lines if p not in held),
        "validation_pairs": sum(1 for p, _ in lines if p in held),
        "train_file_sha256": sha256(train_path),
        "validation_file_sha256": sha256(val_path),
        "held_out_packages": sorted(held),
    }
    with open(os.path.join(args.out, "split.json"), "w") as f:
        json.dump(split, f, indent=1)
        f.write("\n")
    print(f"{split['train_pairs']} training pairs, {split['validation_pairs']} validation pairs "
          f"({len(held)} of {len(packages)} packages held out) in {args.out}")


if __name__ == "__main__":
    main()
