#!/usr/bin/env python3
"""Writes a small llama-architecture GGUF model with random weights, offline.

zblade's compressor runs GGUF models through llama.cpp. Real instruct models cannot be
downloaded here (and are far too big for CI), so tests and benchmarks use a model this script
generates: a real llama graph (RMS norm, RoPE attention, SwiGLU feed-forward) with random
weights and a SentencePiece vocabulary of the 256 byte tokens. llama.cpp loads it, tokenizes,
decodes and samples exactly as it would a trained model; only the words are nonsense, so tests
assert structure (grammar-valid JSON, budgets, caching) and never wording.

    build_tiny_gguf.py OUT.gguf                 # ~0.3 MB, for tests
    build_tiny_gguf.py OUT.gguf --size bench    # ~50 MB, for the throughput benchmark

The output is deterministic for a given --seed, so caches keyed by the model's hash stay valid.
"""

import argparse
import os
import sys

import numpy as np

try:
    import gguf
except ImportError:  # pragma: no cover - a clear message beats a traceback
    sys.exit("build_tiny_gguf.py: the 'gguf' package is missing (pip install gguf)")

SIZES = {
    # name: (embedding width, layers, heads, kv heads, feed-forward width)
    "tiny": (64, 2, 4, 2, 128),
    "bench": (768, 6, 12, 4, 2048),
}


def vocabulary():
    """SentencePiece vocabulary: <unk>, <s>, </s>, then one token per byte.

    With no merges, llama.cpp's SPM tokenizer falls back to byte tokens for every character,
    so any UTF-8 text round-trips and grammars can produce any character.
    """
    tokens = [b"<unk>", b"<s>", b"</s>"]
    scores = [0.0, 0.0, 0.0]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    for byte in range(256):
        tokens.append(f"<0x{byte:02X}>".encode())
        scores.append(0.0)
        types.append(gguf.TokenType.BYTE)
    return tokens, scores, types


def build(path, size, seed, context):
    width, layers, heads, kv_heads, ff = SIZES[size]
    head_dim = width // heads
    rng = np.random.default_rng(seed)
    tokens, scores, types = vocabulary()
    vocab = len(tokens)

    def weights(*shape):
        # Scaled so activations stay finite through the layers (no NaN logits).
        return (rng.standard_normal(shape) / np.sqrt(shape[-1])).astype(np.float32)

    writer = gguf.GGUFWriter(path, "llama")
    writer.add_name(f"zblade-test-llama-{size}")
    writer.add_context_length(context)
    writer.add_embedding_length(width)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(ff)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_rope_dimension_count(head_dim)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)

    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)

    writer.add_tensor("token_embd.weight", weights(vocab, width))
    writer.add_tensor("output_norm.weight", np.ones(width, dtype=np.float32))
    writer.add_tensor("output.weight", weights(vocab, width))
    for layer in range(layers):
        block = f"blk.{layer}"
        writer.add_tensor(f"{block}.attn_norm.weight", np.ones(width, dtype=np.float32))
        writer.add_tensor(f"{block}.attn_q.weight", weights(width, width))
        writer.add_tensor(f"{block}.attn_k.weight", weights(kv_heads * head_dim, width))
        writer.add_tensor(f"{block}.attn_v.weight", weights(kv_heads * head_dim, width))
        writer.add_tensor(f"{block}.attn_output.weight", weights(width, width))
        writer.add_tensor(f"{block}.ffn_norm.weight", np.ones(width, dtype=np.float32))
        writer.add_tensor(f"{block}.ffn_gate.weight", weights(ff, width))
        writer.add_tensor(f"{block}.ffn_up.weight", weights(ff, width))
        writer.add_tensor(f"{block}.ffn_down.weight", weights(width, ff))

    # Written to a temporary name and renamed, so a reader never sees half a model.
    partial = path + ".part"
    writer.path = partial
    writer.write_header_to_file(partial)
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    os.replace(partial, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="where to write the .gguf file")
    parser.add_argument("--size", choices=sorted(SIZES), default="tiny")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--context", type=int, default=8192, help="trained context length")
    args = parser.parse_args()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    build(args.out, args.size, args.seed, args.context)
    print(f"wrote {args.out} ({os.path.getsize(args.out) / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
