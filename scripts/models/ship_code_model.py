#!/usr/bin/env python3
"""Puts a trained code model into the repository: models/NAME (zblade-code-v2, …).

    ship_code_model.py --name NAME --int8 DIR --weights DIR --manifest FILE [--figure NAME=VALUE]...
        [--split FILE] [--dest DIR]

Copies the int8 model's files (what `quantize_int8.py` wrote) and the miner's manifest
(data-manifest.json: each package, version and pair count), then writes:
- PROVENANCE.json: the base model, the data (the miner's manifest.json digest, pair counts by
  language, packages), the training options, hardware and cost (train_code_model.py's
  training.json), the train/validation split (`--split`: a file saying how the pairs were split
  and which packages were held out), the commit of the scripts that made it, and the benchmark
  figures it earned (`--figure`);
- SHA256SUMS: what `scripts/setup.sh` checks before installing it.

Commit a new model only when it beats the shipped one on the code-search benchmark (the
repository should not grow by 23 MB per experiment).
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess

FILES = [
    "model.onnx",
    "tokenizer.json",
    "config.json",
    "special_tokens_map.json",
    "tokenizer_config.json",
    "sentence_bert_config.json",
]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--int8", required=True, help="the int8 model folder")
    ap.add_argument("--weights", required=True, help="train_code_model.py's output (for training.json)")
    ap.add_argument("--manifest", required=True, help="mine_code_pairs's manifest.json")
    ap.add_argument("--name", required=True, help="the model's id, a new one per model (vectors are keyed by it)")
    ap.add_argument("--figure", action="append", default=[], help="NAME=VALUE, a benchmark figure it earned")
    ap.add_argument("--split", help="a JSON file: how the pairs were split into training and validation")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--scripts-commit", help="the commit of the miner and training script that made it "
                    "(default: the last commit touching them here; say it when it was trained elsewhere)")
    ap.add_argument("--dest", help="where to put it (default: models/NAME in this repository)")
    args = ap.parse_args()
    args.dest = args.dest or os.path.join(root, "models", args.name)

    os.makedirs(args.dest, exist_ok=True)
    for name in FILES:
        shutil.copyfile(os.path.join(args.int8, name), os.path.join(args.dest, name))
    # The data it was trained on, package by package (its digest is in PROVENANCE.json).
    shutil.copyfile(args.manifest, os.path.join(args.dest, "data-manifest.json"))
    training = json.load(open(os.path.join(args.weights, "training.json")))
    manifest = json.load(open(args.manifest))
    commit = args.scripts_commit or subprocess.run(
        ["git", "log", "-1", "--format=%H", "--", "scripts/models", "crates/zblade-syntax"],
        cwd=root, capture_output=True, text=True,
    ).stdout.strip()
    figures = dict(f.split("=", 1) for f in args.figure)
    provenance = {
        "name": args.name,
        "base": training["base"],
        "format": "ONNX, int8 weights (ONNX Runtime dynamic quantization, per channel); 384 dimensions, mean pooling",
        "data": {
            "manifest_sha256": sha256(args.manifest),
            "pairs_file_sha256": training["pairs_file_sha256"],
            "pairs_used": training["pairs_used"],
            "pairs_by_language": manifest["pairs_by_language"],
            "cap_per_package": manifest["cap_per_package"],
            "packages": len(manifest["packages"]),
            "excluded": manifest["excluded"],
        },
        "scripts_commit": commit,
        "training": {
            "options": {k: v for k, v in training["options"].items() if k not in ("pairs", "out")},
            "device": training["device"],
            "threads": training["threads"],
            "steps": training["steps_done"],
            "seconds": training["seconds"],
            "final_loss_last_50_steps": training["loss_last_50"],
        },
        "benchmark": figures,
    }
    if args.split:
        provenance["split"] = json.load(open(args.split))
    with open(os.path.join(args.dest, "PROVENANCE.json"), "w") as f:
        json.dump(provenance, f, indent=2)
        f.write("\n")
    with open(os.path.join(args.dest, "SHA256SUMS"), "w") as f:
        for name in FILES + ["PROVENANCE.json"]:
            f.write(f"{sha256(os.path.join(args.dest, name))}  {name}\n")
    print(f"shipped into {args.dest}")


if __name__ == "__main__":
    main()
