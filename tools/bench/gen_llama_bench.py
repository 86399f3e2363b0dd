"""Synthetic Llama-family GGUF files for the decode and prefill benchmarks (issue 14): random weights in the shapes of a
published model, block-quantised by llama.cpp's own gguf package, with a SentencePiece-style vocabulary that both
Kiln and llama.cpp load (<unk>, <s>, </s>, the 256 byte tokens, then filler pieces). The text they write is noise; the
files exist to be timed.

  python3 tools/bench/gen_llama_bench.py --shape llama32-1b --type q8_0 --out /tmp/bench/llama32-1b-q8_0.gguf

Shapes: llama32-1b (Llama-3.2-1B: hidden 2048, 16 layers, 32 heads, 8 KV heads, FFN 8192, vocab 128256, tied
embeddings, RoPE base 500000) and smollm-135m (SmolLM-135M: hidden 576, 30 layers, 9 heads, 3 KV heads, FFN 1536,
vocab 49152, tied). Types: q8_0, q4_0, f32. Weights are N(0, 0.02), norms 1; the seed is fixed, so a file is the same
every time. Not committed (hundreds of MB to GB): regenerate with this script.
"""
import argparse
import os

import gguf
import numpy as np
from gguf import GGMLQuantizationType as Q, quants

SHAPES = {
    "llama32-1b": dict(hidden=2048, layers=16, heads=32, kv_heads=8, ffn=8192, vocab=128256, rope_base=500000.0),
    "smollm-135m": dict(hidden=576, layers=30, heads=9, kv_heads=3, ffn=1536, vocab=49152, rope_base=10000.0),
}
TYPES = {"q8_0": Q.Q8_0, "q4_0": Q.Q4_0, "f32": Q.F32}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", choices=SHAPES, required=True)
    ap.add_argument("--type", choices=TYPES, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--context", type=int, default=4096)
    a = ap.parse_args()
    s = SHAPES[a.shape]
    qtype = TYPES[a.type]
    rng = np.random.default_rng(20261126)
    head_dim = s["hidden"] // s["heads"]

    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    w = gguf.GGUFWriter(a.out, "llama")
    w.add_name(f"kiln-bench-{a.shape}-{a.type}")
    w.add_context_length(a.context)
    w.add_embedding_length(s["hidden"])
    w.add_block_count(s["layers"])
    w.add_feed_forward_length(s["ffn"])
    w.add_head_count(s["heads"])
    w.add_head_count_kv(s["kv_heads"])
    w.add_rope_freq_base(s["rope_base"])
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(head_dim)
    w.add_vocab_size(s["vocab"])
    w.add_file_type({"q8_0": 7, "q4_0": 2, "f32": 0}[a.type])

    tokens, scores, types = ["<unk>", "<s>", "</s>"], [0.0, 0.0, 0.0], [2, 3, 3]
    for b in range(256):
        tokens.append(f"<0x{b:02X}>")
        scores.append(0.0)
        types.append(6)
    for i in range(s["vocab"] - len(tokens)):
        tokens.append(f"\u2581t{i}")
        scores.append(-float(i))
        types.append(1)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)

    def add(name, shape, norm=False):
        data = np.ones(shape, np.float32) if norm else (rng.standard_normal(shape, dtype=np.float32) * 0.02)
        if norm or qtype == Q.F32:
            w.add_tensor(name, data)
        else:
            w.add_tensor(name, quants.quantize(data, qtype), raw_dtype=qtype)

    h, kv = s["hidden"], s["kv_heads"] * head_dim
    add("token_embd.weight", (s["vocab"], h))
    add("output_norm.weight", (h,), norm=True)
    for i in range(s["layers"]):
        p = f"blk.{i}."
        add(p + "attn_norm.weight", (h,), norm=True)
        add(p + "attn_q.weight", (h, h))
        add(p + "attn_k.weight", (kv, h))
        add(p + "attn_v.weight", (kv, h))
        add(p + "attn_output.weight", (h, h))
        add(p + "ffn_norm.weight", (h,), norm=True)
        add(p + "ffn_gate.weight", (s["ffn"], h))
        add(p + "ffn_up.weight", (s["ffn"], h))
        add(p + "ffn_down.weight", (h, s["ffn"]))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print("wrote", a.out, os.path.getsize(a.out), "bytes")


if __name__ == "__main__":
    main()
