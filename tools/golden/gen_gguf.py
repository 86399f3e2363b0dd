"""Fixtures for kiln-llm's model-file readers (issue 14), written with code no one here wrote.

Writes, under kiln-llm/src/test/resources:
  gguf/files/metadata.gguf     every GGUF metadata value type, nested arrays included, plus one small F32 tensor
  gguf/files/tensors.gguf      one tensor of each supported ggml type, odd shapes (5x64, 3x256, 2x512, ...)
  gguf/files/aligned64.gguf    general.alignment = 64 and three tensors
  gguf/files/v2.gguf           metadata.gguf with its version field patched to 2 (v2 and v3 share the layout;
                               the official writer only writes v3)
  gguf/files/llama.gguf        llama.* hyperparameters as llama.cpp's converter writes them, tiny tensors
  gguf/files/qwen2.gguf        qwen2.* hyperparameters, QKV biases, no output.weight (tied embeddings)
  gguf/ref/<tensor>.npy        each tensor of tensors.gguf dequantised to f32 by gguf.quants.dequantize
  safetensors/files/model.safetensors   F32, F16 and BF16 tensors written by the safetensors package
  safetensors/ref/<tensor>.npy          the same tensors as f32
  config/*.json                Hugging Face config.json files: transformers' own (its current format, with
                               rope_parameters) and the 4.x format of published checkpoints

The files are written by the official `gguf` package (llama.cpp's writer, 0.19) and quantised with its
gguf.quants.quantize where it can (Q8_0, Q4_0, Q4_1, BF16). gguf.quants has no quantiser for the K-quants, so
their blocks are random bytes with finite f16 super-block scales: every bit pattern of the packed 6-bit scales
and mins then occurs, which a real quantiser would not guarantee. The Java tests compare Kiln's dequantisation
bit for bit with gguf.quants.dequantize (the arithmetic is exact f32 products of f16 scales).

Run with a python3 that has gguf 0.19, numpy, safetensors, torch and transformers:
  python3 tools/golden/gen_gguf.py
(/usr/bin/python3, which generate_all.sh uses for the other generators, lacks gguf; generate_all.sh runs this
one with $LLM_PYTHON, python3 by default.)
"""
import json
import os
import shutil

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T, GGUFValueType as V
from gguf import quants
from numpy.lib import format as npformat

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kiln-llm", "src", "test", "resources")
GGUF_FILES = os.path.join(ROOT, "gguf", "files")
GGUF_REF = os.path.join(ROOT, "gguf", "ref")
ST_FILES = os.path.join(ROOT, "safetensors", "files")
ST_REF = os.path.join(ROOT, "safetensors", "ref")
CONFIG = os.path.join(ROOT, "config")

RNG = np.random.default_rng(14)


def fresh(folder):
    if os.path.isdir(folder):
        shutil.rmtree(folder)
    os.makedirs(folder)


def save_npy(folder, name, array):
    with open(os.path.join(folder, name + ".npy"), "wb") as f:
        # not np.ascontiguousarray, which turns a 0-d array into 1-d
        npformat.write_array(f, np.array(array, dtype="<f4", order="C"), version=(1, 0))


def write(writer):
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


# ----------------------------------------------------------------------------------------------------------------
# metadata.gguf: every value type; the Java test (GgufMetadataTest) states the same values

def metadata_file():
    w = gguf.GGUFWriter(os.path.join(GGUF_FILES, "metadata.gguf"), "llama")  # adds general.architecture = llama
    w.add_uint8("test.u8", 200)
    w.add_int8("test.i8", -100)
    w.add_uint16("test.u16", 60000)
    w.add_int16("test.i16", -30000)
    w.add_uint32("test.u32", 4000000000)               # above 2^31: the reader must zero-extend
    w.add_int32("test.i32", -2000000000)
    w.add_float32("test.f32", 0.1)                     # the f32 nearest 0.1, widened exactly to a double
    w.add_bool("test.bool_true", True)
    w.add_bool("test.bool_false", False)
    w.add_string("test.string", "h\u00e9llo w\u00f6rld \u2764 \U0001F600")
    w.add_key_value("test.empty_string", "", V.STRING)  # add_string skips empty strings
    w.add_uint64("test.u64", 18446744073709551615)     # 2^64 - 1: raw bits, -1 as a Java long
    w.add_int64("test.i64", -9000000000000000000)
    w.add_float64("test.f64", 3.141592653589793)
    w.add_key_value("test.arr_u8", [0, 1, 255], V.ARRAY, sub_type=V.UINT8)
    w.add_key_value("test.arr_i8", [-128, 0, 127], V.ARRAY, sub_type=V.INT8)
    w.add_key_value("test.arr_u16", [0, 65535], V.ARRAY, sub_type=V.UINT16)
    w.add_key_value("test.arr_i16", [-32768, 32767], V.ARRAY, sub_type=V.INT16)
    w.add_key_value("test.arr_u32", [0, 4294967295], V.ARRAY, sub_type=V.UINT32)
    w.add_key_value("test.arr_i32", [-1, 2, -3], V.ARRAY, sub_type=V.INT32)
    w.add_key_value("test.arr_u64", [1, 18446744073709551615], V.ARRAY, sub_type=V.UINT64)
    w.add_key_value("test.arr_i64", [-5, 5], V.ARRAY, sub_type=V.INT64)
    w.add_key_value("test.arr_f32", [1.5, -0.25, 0.1], V.ARRAY, sub_type=V.FLOAT32)
    w.add_key_value("test.arr_f64", [2.5, -1e300], V.ARRAY, sub_type=V.FLOAT64)
    w.add_key_value("test.arr_bool", [True, False, True], V.ARRAY, sub_type=V.BOOL)
    w.add_array("test.arr_string", ["a", "", "\u00df\u4e2d"])
    w.add_array("test.nested_i32", [[1, 2], [3], [4, 5, 6]])           # array of arrays of INT32
    w.add_array("test.nested_string", [["x", "y"], ["z"]])
    w.add_array("test.nested3", [[[1], [2, 3]], [[4]]])               # three levels
    # the tokenizer keys as llama.cpp writes them (array of strings, f32 scores, i32 token types)
    w.add_token_list(["<unk>", "<s>", "</s>", "\u2581the"])
    w.add_token_scores([0.0, -1.0, -2.0, -3.5])
    w.add_token_types([2, 3, 3, 1])
    w.add_tensor("weight", np.arange(6, dtype=np.float32).reshape(2, 3))
    write(w)


# ----------------------------------------------------------------------------------------------------------------
# tensors.gguf: every supported tensor type, with its reference dequantisation

def pack_scales_mins(sc, m):
    """The 12 bytes of Q4_K/Q5_K's 6-bit scales and mins, packed as ggml's quantize_row_q4_K packs them."""
    out = np.zeros((sc.shape[0], 12), dtype=np.uint8)
    out[:, 0:4] = (sc[:, 0:4] & 63) | ((sc[:, 4:8] >> 4) << 6)
    out[:, 4:8] = (m[:, 0:4] & 63) | ((m[:, 4:8] >> 4) << 6)
    out[:, 8:12] = (sc[:, 4:8] & 0xF) | ((m[:, 4:8] & 0xF) << 4)
    return out


def random_kquant(qtype, rows, cols):
    """
    Random K-quant blocks with finite f16 scales: d (and dmin) from a small range of both signs, sub-block scales and
    mins random but non-zero (so that every bit of a block affects its values, which GgufDequantTest checks), and
    random quants.
    """
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    nb = rows * cols // block
    raw = RNG.integers(0, 256, size=(nb, size), dtype=np.uint8)

    def f16(lo, hi):
        v = RNG.uniform(lo, hi, size=nb) * RNG.choice([-1.0, 1.0], size=nb)
        return v.astype(np.float16).view(np.uint8).reshape(nb, 2)

    if qtype in (T.Q4_K, T.Q5_K):          # block_q4_K / block_q5_K: d, dmin, scales[12], ...
        raw[:, 0:2] = f16(1e-4, 1e-2)
        raw[:, 2:4] = f16(1e-4, 1e-2)
        raw[:, 4:16] = pack_scales_mins(RNG.integers(1, 64, size=(nb, 8)), RNG.integers(1, 64, size=(nb, 8)))
    elif qtype == T.Q6_K:                  # block_q6_K: ql[128], qh[64], scales[16], d
        raw[:, 192:208] = (RNG.integers(1, 128, size=(nb, 16)) * RNG.choice([-1, 1], size=(nb, 16))).astype(np.int8).view(np.uint8)
        raw[:, size - 2:size] = f16(1e-4, 1e-2)
    return raw.reshape(rows, cols // block * size)


def tensors_file():
    w = gguf.GGUFWriter(os.path.join(GGUF_FILES, "tensors.gguf"), "llama")
    specs = []  # (name, raw bytes or array, qtype or None)

    f32 = RNG.standard_normal((3, 5)).astype(np.float32)
    specs.append(("f32_3x5", f32, None))
    specs.append(("f32_7", RNG.standard_normal(7).astype(np.float32), None))
    specs.append(("f32_2x3x4", RNG.standard_normal((2, 3, 4)).astype(np.float32), None))
    specs.append(("f32_2x1x3x2", RNG.standard_normal((2, 1, 3, 2)).astype(np.float32), None))
    # f16 with the awkward values: zeros of both signs, a subnormal, the largest finite, infinities, a NaN
    special = np.array([0.0, -0.0, 6e-8, 65504.0, np.inf, -np.inf, np.nan], dtype=np.float16)
    f16 = np.concatenate([special, RNG.standard_normal(14 - special.size).astype(np.float16)]).reshape(2, 7)
    specs.append(("f16_2x7", f16, None))
    bf16_src = np.concatenate([np.array([0.0, -0.0, 1e-40, 3e38, np.inf, np.nan], dtype=np.float32),
                               RNG.standard_normal(6).astype(np.float32)]).reshape(3, 4)
    specs.append(("bf16_3x4", quants.quantize(bf16_src, T.BF16), T.BF16))
    for qtype, shape in [(T.Q8_0, (5, 64)), (T.Q4_0, (5, 64)), (T.Q4_1, (5, 64)), (T.Q8_0, (2, 1, 2, 32))]:
        src = RNG.standard_normal(shape).astype(np.float32)
        name = qtype.name.lower() + "_" + "x".join(map(str, shape))
        specs.append((name, quants.quantize(src, qtype), qtype))
    for qtype, shape in [(T.Q4_K, (3, 256)), (T.Q4_K, (2, 512)), (T.Q5_K, (2, 512)), (T.Q5_K, (3, 256)),
                         (T.Q6_K, (3, 256)), (T.Q6_K, (2, 512))]:
        name = qtype.name.lower() + "_" + "x".join(map(str, shape))
        specs.append((name, random_kquant(qtype, *shape), qtype))

    for name, data, qtype in specs:
        w.add_tensor(name, data, raw_dtype=qtype)
        ref = data.astype(np.float32) if qtype is None else quants.dequantize(data, qtype)
        save_npy(GGUF_REF, name, ref)
    write(w)


def aligned64_file():
    w = gguf.GGUFWriter(os.path.join(GGUF_FILES, "aligned64.gguf"), "llama")
    w.add_custom_alignment(64)
    w.add_tensor("a", np.arange(3, dtype=np.float32))                 # 12 bytes, then padding to 64
    w.add_tensor("b", np.arange(5, dtype=np.float16))
    w.add_tensor("c", quants.quantize(np.linspace(-1, 1, 32, dtype=np.float32).reshape(1, 32), T.Q8_0), raw_dtype=T.Q8_0)
    write(w)


def v2_file():
    """v2 differs from v3 only in that v3 may be big-endian: same little-endian layout, 64-bit counts."""
    src = os.path.join(GGUF_FILES, "metadata.gguf")
    with open(src, "rb") as f:
        data = bytearray(f.read())
    assert data[4:8] == (3).to_bytes(4, "little")
    data[4:8] = (2).to_bytes(4, "little")
    with open(os.path.join(GGUF_FILES, "v2.gguf"), "wb") as f:
        f.write(data)


# ----------------------------------------------------------------------------------------------------------------
# hyperparameters as llama.cpp's converter writes them (convert_hf_to_gguf.py: LlamaModel, Qwen2Model)

def model_file(arch, name, *, tied, qkv_bias, extra):
    w = gguf.GGUFWriter(os.path.join(GGUF_FILES, name), arch)
    w.add_name("tiny " + arch)
    w.add_context_length(2048)
    w.add_embedding_length(16)
    w.add_block_count(2)
    w.add_feed_forward_length(40)
    w.add_head_count(4)
    w.add_head_count_kv(2)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(500000.0 if arch == "llama" else 1000000.0)
    w.add_rope_dimension_count(4)
    w.add_vocab_size(32)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    extra(w)
    w.add_tensor("token_embd.weight", np.zeros((32, 16), dtype=np.float16))
    if not tied:
        w.add_tensor("output.weight", np.zeros((32, 16), dtype=np.float16))
    if qkv_bias:
        w.add_tensor("blk.0.attn_q.bias", np.zeros(16, dtype=np.float32))
    write(w)


def llama_extra(w):
    w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
    w.add_rope_scaling_factor(4.0)
    w.add_rope_scaling_orig_ctx_len(512)
    w.add_sliding_window(1024)


# ----------------------------------------------------------------------------------------------------------------
# safetensors and config.json

def safetensors_file():
    import torch
    from safetensors.torch import save_file
    g = torch.Generator().manual_seed(14)
    tensors = {
        "model.embed_tokens.weight": torch.randn(6, 4, generator=g, dtype=torch.float32),
        "model.norm.weight": torch.randn(4, generator=g).to(torch.float16),
        "lm_head.weight": torch.randn(3, 4, generator=g).to(torch.bfloat16),
        "model.layers.0.self_attn.q_proj.weight": torch.randn(2, 3, 4, generator=g).to(torch.bfloat16),
        "scalar": torch.tensor(2.5, dtype=torch.float32),
    }
    save_file(tensors, os.path.join(ST_FILES, "model.safetensors"), metadata={"format": "pt"})  # one key: the writer orders keys at random
    for name, t in tensors.items():
        save_npy(ST_REF, name, t.to(torch.float32).numpy())


def transformers_configs():
    # transformers 5 imports torchvision for image utilities; the torchvision here does not match torch, and
    # configs need neither, so tell transformers it is absent
    import transformers.utils as tu
    import transformers.utils.import_utils as iu
    iu.is_torchvision_available = tu.is_torchvision_available = lambda: False
    from transformers import LlamaConfig, Qwen2Config, MistralConfig
    LlamaConfig(hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                vocab_size=96, max_position_embeddings=131072, rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=[2, 3],
                tie_word_embeddings=True, rope_theta=500000.0,
                rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                              "original_max_position_embeddings": 8192}).to_json_file(os.path.join(CONFIG, "llama_tf5.json"))
    Qwen2Config(hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                vocab_size=96, max_position_embeddings=4096, rms_norm_eps=1e-6, rope_theta=1000000.0,
                bos_token_id=1, eos_token_id=2).to_json_file(os.path.join(CONFIG, "qwen2_tf5.json"))
    MistralConfig(hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  vocab_size=96, sliding_window=4096, head_dim=32).to_json_file(os.path.join(CONFIG, "mistral_tf5.json"))


# The 4.x format of published checkpoints (top-level rope_theta and rope_scaling): Llama-3.2-1B's config.json and
# Qwen2.5-0.5B's, whose sliding_window is set but switched off by use_sliding_window.
LLAMA32_1B = {
    "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0, "bos_token_id": 128000,
    "eos_token_id": 128001, "head_dim": 64, "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
    "intermediate_size": 8192, "max_position_embeddings": 131072, "mlp_bias": False, "model_type": "llama",
    "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "rope_theta": 500000.0, "tie_word_embeddings": True, "torch_dtype": "bfloat16", "transformers_version": "4.45.0.dev0",
    "use_cache": True, "vocab_size": 128256}
QWEN25_05B = {
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151643,
    "hidden_act": "silu", "hidden_size": 896, "initializer_range": 0.02, "intermediate_size": 4864,
    "max_position_embeddings": 32768, "max_window_layers": 24, "model_type": "qwen2", "num_attention_heads": 14,
    "num_hidden_layers": 24, "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
    "sliding_window": 32768, "tie_word_embeddings": True, "torch_dtype": "bfloat16", "transformers_version": "4.40.1",
    "use_cache": True, "use_sliding_window": False, "vocab_size": 151936}


def main():
    for folder in (GGUF_FILES, GGUF_REF, ST_FILES, ST_REF, CONFIG):
        fresh(folder)
    metadata_file()
    tensors_file()
    aligned64_file()
    v2_file()
    model_file("llama", "llama.gguf", tied=False, qkv_bias=False, extra=llama_extra)
    model_file("qwen2", "qwen2.gguf", tied=True, qkv_bias=True, extra=lambda w: None)
    safetensors_file()
    transformers_configs()
    for name, cfg in [("llama32_1b_hf4.json", LLAMA32_1B), ("qwen25_05b_hf4.json", QWEN25_05B)]:
        with open(os.path.join(CONFIG, name), "w") as f:
            json.dump(cfg, f, indent=2)
            f.write("\n")
    total = sum(os.path.getsize(os.path.join(d, f)) for top in (GGUF_FILES, GGUF_REF, ST_FILES, ST_REF, CONFIG)
                for d, _, fs in os.walk(top) for f in fs)
    print(f"{ROOT}: {total} bytes of fixtures (gguf {gguf.__name__} writer, version {gguf.GGUF_VERSION})")


if __name__ == "__main__":
    main()
