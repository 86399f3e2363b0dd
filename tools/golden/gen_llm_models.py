"""Tiny random-weight language models and their reference outputs, for kiln-llm's model tests (issue 14).

Everything here is computed by code no one here wrote: the models are Hugging Face `transformers` models
(LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, eager attention, float32), the tokenizers are trained by
Hugging Face `tokenizers` and `sentencepiece`, the GGUF files are written by llama.cpp's `gguf` package (0.19) with
the tensor names of its own TensorNameMap, and quantised blocks come from gguf.quants.quantize.

Writes, under kiln-llm/src/test/resources/llm/:
  <model>/hf/           config.json, model.safetensors (bf16, as published checkpoints are), tokenizer.json,
                        tokenizer_config.json, generation_config.json: what save_pretrained writes
  <model>/<model>-<type>.gguf
                        the same weights as llama.cpp's converter (convert_hf_to_gguf.py) writes them: its tensor
                        names, Q and K rows permuted for the llama architecture (LlamaModel.permute), 1-D tensors
                        in F32, 2-D tensors in F32, F16, Q8_0 or Q4_0, Llama 3 RoPE scaling as the rope_freqs.weight
                        tensor, the tokenizer as tokenizer.ggml.* metadata
  <model>/ref-<weights>/prefill.npy   logits (n, vocab) of SEQUENCE's tokens, one forward pass
  <model>/ref-<weights>/decode.npy    logits (n - PREFIX, vocab) of the same tokens, PREFIX of them prefilled into
                                      transformers' KV cache and the rest fed one token per forward pass
  <model>/ref-<weights>/greedy.json   {"prompt": text, "prompt_ids": [...], "continuation": [32 ids], "min_margin":
                                      the smallest gap between the top two logits over those 32 steps}
  <model>/sequence.json               {"text": ..., "ids": [...], "prefix": PREFIX}
  <weights> is "f32" for the weights of model.safetensors (bf16 values, so the f32 GGUF holds the very same
  numbers and shares the reference), or the GGUF type: the reference then runs transformers on the weights read back
  from that GGUF file with gguf's GGUFReader and gguf.quants.dequantize, Q/K rows un-permuted -- a reference that
  dequantises, then multiplies in f32.

Models (hidden 64, 2 layers, 4 query heads and 2 key/value heads of 16, SwiGLU MLP of 128, RMSNorm):
  llama    Llama 3 with llama3 RoPE scaling (factor 8, low/high frequency factors 1 and 4, original context 64:
           with head_dim 16 and theta 500000 every branch of the scaling is taken), tied embeddings, a Llama-3-style
           byte-level BPE tokenizer; GGUF in F32 and Q8_0
  mistral  Mistral with a sliding window of 5 tokens (the sequences are longer, so the window matters; checked
           below against the same model without it), untied output, a SentencePiece BPE tokenizer with byte
           fallback (Llama 2 / Mistral style); GGUF in F16. llama.cpp's converter writes Mistral as the llama
           architecture and writes no window (llama.cpp applies none); these files add llama.attention.sliding_window
           (gguf's add_sliding_window) so that a GGUF file states what the model computes.
  qwen2    Qwen2 with QKV biases, tied embeddings, a Qwen2-style byte-level BPE tokenizer; GGUF in Q8_0 and Q4_0

Weights are drawn with a seeded torch generator, then rounded to bf16: embeddings and an untied output N(0, 0.5^2),
norms 1 + N(0, 0.1^2), biases N(0, 0.1^2), projections N(0, gain^2/fan_in) with gain 4 for q and k (sharp attention,
so positions matter; sharper makes the logits ill-conditioned: at gain 6 float32 and float64 runs of transformers
itself differ by 2e-4), 3 for o and down (the blocks outweigh the embedding) and 1 for the rest. With transformers'
small initialisation a random model repeats one token forever; these give varied greedy continuations whose top two
logits stay apart (min_margin records by how much; at least MIN_MARGIN, checked here).

Tokenizers: trained here on the licence texts gen_tokenizers.py uses (its helpers build them the same way), with
small vocabularies (384 byte-level tokens, 512 SentencePiece pieces) so the files stay small.

Run with the python3 on PATH (torch, transformers 5, tokenizers, sentencepiece, safetensors, gguf 0.19; offline):
  python3 tools/golden/gen_llm_models.py
"""
import copy
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import torch

# transformers 5 imports torchvision for image utilities; the torchvision here does not match torch, and these
# language models need neither, so tell transformers it is absent (as gen_gguf.py does)
import transformers.utils as tu
import transformers.utils.import_utils as iu
iu.is_torchvision_available = tu.is_torchvision_available = lambda: False
from transformers import (LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM, Qwen2Config,  # noqa: E402
                          Qwen2ForCausalLM)

import gguf  # noqa: E402
from gguf import GGMLQuantizationType as Q, quants  # noqa: E402
import sentencepiece as spm  # noqa: E402
from tokenizers import AddedToken, Tokenizer, models, processors, trainers, pre_tokenizers, decoders  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_tokenizers as gt  # noqa: E402

ROOT = os.path.join(HERE, "..", "..", "kiln-llm", "src", "test", "resources", "llm")

HIDDEN, LAYERS, HEADS, KV_HEADS, FFN = 64, 2, 4, 2, 128
SEQUENCE_TEXT = "The Licensor grants You a worldwide, royalty-free licence to use the Software."
SEQUENCE_LEN, PREFIX = 14, 8
PROMPT = "This License applies to"
CONTINUATION = 32
MIN_MARGIN = 0.002  # logits computed in another order differ by a few 1e-5: a greedy choice this clear cannot flip


# ---------------------------------------------------------------------------------------------------- tokenizers

def train_byte_level(pattern, specials, nfc, bos, ignore_merges, vocab_size=384):
    tok = Tokenizer(models.BPE(ignore_merges=ignore_merges))
    if nfc:
        from tokenizers import normalizers
        tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = gt.byte_level_split(pattern)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size - len(specials), min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(gt.training_lines(), trainer)
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in specials])
    if bos is not None:
        tok.post_processor = processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B",
                                          special_tokens=[(bos, tok.token_to_id(bos))])])
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok


def llama3_tokenizer():
    tok = train_byte_level(gt.LLAMA3_SPLIT, gt.LLAMA3_SPECIALS, False, "<|begin_of_text|>", True)
    meta = gt.byte_level_gguf_metadata(tok, "llama-bpe", "<|begin_of_text|>", "<|eot_id|>", True, gt.LLAMA3_TEMPLATE)
    config = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>", "chat_template": gt.LLAMA3_TEMPLATE}
    return tok, meta, config


def qwen2_tokenizer():
    tok = train_byte_level(gt.QWEN2_SPLIT, gt.QWEN2_SPECIALS, True, None, False)
    meta = gt.byte_level_gguf_metadata(tok, "qwen2", "<|endoftext|>", "<|im_end|>", False, gt.QWEN2_TEMPLATE)
    config = {"bos_token": None, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
              "chat_template": gt.QWEN2_TEMPLATE}
    return tok, meta, config


def spm_tokenizer(workdir):
    """Llama 2's SentencePiece configuration (gen_tokenizers.train_spm), 512 pieces, ASCII training lines (the rest
    of the text reaches the model through byte fallback)."""
    corpus = os.path.join(workdir, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write("\n".join(line for line in gt.training_lines() if line.isascii()) + "\n")
    spm.SentencePieceTrainer.Train(
        input=corpus, model_prefix=os.path.join(workdir, "tokenizer"), model_type="bpe", vocab_size=512,
        character_coverage=1.0, byte_fallback=True, split_digits=True, normalization_rule_name="identity",
        remove_extra_whitespaces=False, add_dummy_prefix=True, allow_whitespace_only_pieces=True,
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1, num_threads=1, minloglevel=2)
    tok = gt.hf_from_spm(os.path.join(workdir, "tokenizer.model"), metaspace=False)
    meta = gt.spm_gguf_metadata(workdir)
    config = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "add_bos_token": True,
              "add_eos_token": False, "chat_template": gt.LLAMA2_TEMPLATE}
    return tok, meta, config


# ---------------------------------------------------------------------------------------------------- models

def make_model(name, vocab, bos, eos):
    common = dict(vocab_size=vocab, hidden_size=HIDDEN, intermediate_size=FFN, num_hidden_layers=LAYERS,
                  num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, max_position_embeddings=128,
                  bos_token_id=bos, eos_token_id=eos, attn_implementation="eager")
    if name == "llama":
        cfg = LlamaConfig(**common, rms_norm_eps=1e-5, tie_word_embeddings=True, rope_theta=500000.0,
                          rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                        "high_freq_factor": 4.0, "original_max_position_embeddings": 64})
        cls = LlamaForCausalLM
    elif name == "mistral":
        cfg = MistralConfig(**common, rms_norm_eps=1e-6, tie_word_embeddings=False, rope_theta=10000.0,
                            sliding_window=5, head_dim=HIDDEN // HEADS)
        cls = MistralForCausalLM
    else:
        cfg = Qwen2Config(**common, rms_norm_eps=1e-6, tie_word_embeddings=True, rope_theta=1000000.0,
                          use_sliding_window=False)
        cls = Qwen2ForCausalLM
    model = cls(cfg).eval()
    g = torch.Generator().manual_seed({"llama": 1, "mistral": 2, "qwen2": 3}[name])
    with torch.no_grad():
        for pname, p in sorted(model.named_parameters()):
            if pname.endswith("norm.weight"):
                v = 1 + 0.1 * torch.randn(p.shape, generator=g)
            elif pname.endswith(".bias"):
                v = 0.1 * torch.randn(p.shape, generator=g)
            elif "embed_tokens" in pname:
                v = 0.5 * torch.randn(p.shape, generator=g)
            elif pname == "lm_head.weight":
                v = 0.5 * torch.randn(p.shape, generator=g)
            else:
                gain = 4.0 if pname.endswith(("q_proj.weight", "k_proj.weight")) else \
                    3.0 if pname.endswith(("o_proj.weight", "down_proj.weight")) else 1.0
                v = gain * torch.randn(p.shape, generator=g) / p.shape[1] ** 0.5
            p.copy_(v.to(torch.bfloat16).to(torch.float32))
    return model


# ---------------------------------------------------------------------------------------------------- GGUF

def permute(w, n_head, n_head_kv):
    """convert_hf_to_gguf.py's LlamaModel.permute: rotate_half's layout of Q/K rows to GGML's interleaved pairs."""
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def unpermute(w, n_head):
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def llama3_rope_factors(cfg):
    """convert_hf_to_gguf.py's LlamaModel.generate_extra_tensors for rope_type llama3: per-frequency divisors."""
    rp = cfg.rope_parameters
    base, dim = rp["rope_theta"], head_dim(cfg)
    freqs = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    factor, low, high, old = rp["factor"], rp["low_freq_factor"], rp["high_freq_factor"], rp["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / low, old / high
    out = []
    for freq in freqs:
        wavelen = 2 * np.pi / freq
        if wavelen < high_wavelen:
            out.append(1)
        elif wavelen > low_wavelen:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def head_dim(cfg):
    return getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads


FILE_TYPES = {"f32": (gguf.LlamaFileType.ALL_F32, None), "f16": (gguf.LlamaFileType.MOSTLY_F16, Q.F16),
              "q8_0": (gguf.LlamaFileType.MOSTLY_Q8_0, Q.Q8_0), "q4_0": (gguf.LlamaFileType.MOSTLY_Q4_0, Q.Q4_0)}


def write_gguf(path, name, model, tok_meta, qname):
    cfg = model.config
    arch = "qwen2" if name == "qwen2" else "llama"  # MistralForCausalLM converts as LlamaModel
    march = gguf.MODEL_ARCH.QWEN2 if arch == "qwen2" else gguf.MODEL_ARCH.LLAMA
    ftype, qtype = FILE_TYPES[qname]
    w = gguf.GGUFWriter(path, arch)
    w.add_type(gguf.GGUFType.MODEL)
    w.add_name(f"tiny {name}")
    w.add_block_count(cfg.num_hidden_layers)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_rope_freq_base(cfg.rope_parameters["rope_theta"])
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_rope_dimension_count(head_dim(cfg))
    w.add_vocab_size(cfg.vocab_size)
    w.add_file_type(ftype)
    if name == "mistral":
        w.add_sliding_window(cfg.sliding_window)
    for key, value in tok_meta.items():
        if key == "general.architecture":
            continue
        add_tokenizer_key(w, key, value)
    tmap = gguf.get_tensor_name_map(march, cfg.num_hidden_layers)
    for hf_name, t in model.state_dict().items():
        if hf_name == "lm_head.weight" and cfg.tie_word_embeddings:
            continue  # tied: the file has no output.weight, as the converter writes it
        data = t.numpy().astype(np.float32)
        if arch == "llama" and hf_name.endswith(("q_proj.weight", "q_proj.bias")):
            data = permute(data, cfg.num_attention_heads, cfg.num_attention_heads)
        if arch == "llama" and hf_name.endswith(("k_proj.weight", "k_proj.bias")):
            data = permute(data, cfg.num_attention_heads, cfg.num_key_value_heads)
        gname = tmap.get_name(hf_name, try_suffixes=(".weight", ".bias"))
        assert gname is not None, hf_name
        if data.ndim == 1 or qtype is None:
            w.add_tensor(gname, data)
        elif qtype == Q.F16:
            w.add_tensor(gname, data.astype(np.float16))
        else:
            w.add_tensor(gname, quants.quantize(data, qtype), raw_dtype=qtype)
    if cfg.rope_parameters.get("rope_type") == "llama3":
        w.add_tensor(gguf.TENSOR_NAMES[gguf.MODEL_TENSOR.ROPE_FREQS] + ".weight", llama3_rope_factors(cfg))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def add_tokenizer_key(w, key, value):
    """The tokenizer.ggml.* keys with the types the converter gives them (gguf.vocab / SpecialVocab)."""
    if key == "tokenizer.ggml.model":
        w.add_tokenizer_model(value)
    elif key == "tokenizer.ggml.pre":
        w.add_tokenizer_pre(value)
    elif key == "tokenizer.ggml.tokens":
        w.add_token_list(value)
    elif key == "tokenizer.ggml.token_type":
        w.add_token_types(value)
    elif key == "tokenizer.ggml.scores":
        w.add_token_scores(value)
    elif key == "tokenizer.ggml.merges":
        w.add_token_merges(value)
    elif key == "tokenizer.ggml.bos_token_id":
        w.add_bos_token_id(value)
    elif key == "tokenizer.ggml.eos_token_id":
        w.add_eos_token_id(value)
    elif key == "tokenizer.ggml.unknown_token_id":
        w.add_unk_token_id(value)
    elif key == "tokenizer.ggml.padding_token_id":
        w.add_pad_token_id(value)
    elif key == "tokenizer.ggml.add_bos_token":
        w.add_add_bos_token(value)
    elif key == "tokenizer.ggml.add_eos_token":
        w.add_add_eos_token(value)
    elif key == "tokenizer.chat_template":
        w.add_chat_template(value)
    else:
        raise ValueError(key)


def model_from_gguf(path, name, template):
    """A transformers model holding the weights of a GGUF file, read back by gguf's own reader and dequantised."""
    cfg = template.config
    reader = gguf.GGUFReader(path)
    march = gguf.MODEL_ARCH.QWEN2 if name == "qwen2" else gguf.MODEL_ARCH.LLAMA
    tmap = gguf.get_tensor_name_map(march, cfg.num_hidden_layers)
    by_gguf = {tmap.get_name(n, try_suffixes=(".weight", ".bias")): n for n in template.state_dict()}
    state = {}
    for t in reader.tensors:
        if t.name == "rope_freqs.weight":
            continue
        values = quants.dequantize(t.data, t.tensor_type).astype(np.float32).reshape(tuple(reversed(t.shape.tolist())))
        hf_name = by_gguf[t.name]
        if name != "qwen2" and hf_name.endswith(("q_proj.weight", "q_proj.bias")):
            values = unpermute(values, cfg.num_attention_heads)
        if name != "qwen2" and hf_name.endswith(("k_proj.weight", "k_proj.bias")):
            values = unpermute(values, cfg.num_key_value_heads)
        state[hf_name] = torch.from_numpy(values.copy())
    if cfg.tie_word_embeddings:
        state["lm_head.weight"] = state["model.embed_tokens.weight"]
    model = type(template)(cfg).to(torch.float32).eval()  # cfg.dtype says bf16 since save_pretrained
    model.load_state_dict(state, strict=True)
    return model


# ---------------------------------------------------------------------------------------------------- references

@torch.no_grad()
def references(model, seq_ids, prompt_ids):
    ids = torch.tensor([seq_ids])
    prefill = model(ids).logits[0].numpy()
    out = model(ids[:, :PREFIX], use_cache=True)
    past, steps = out.past_key_values, []
    for t in range(PREFIX, len(seq_ids)):
        out = model(ids[:, t:t + 1], past_key_values=past, use_cache=True)
        past = out.past_key_values
        steps.append(out.logits[0, -1].numpy())
    decode = np.stack(steps)
    # transformers' own cache must agree with its own full pass: a check of the reference, not of Kiln
    assert np.allclose(decode, prefill[PREFIX:], rtol=1e-4, atol=1e-4), np.abs(decode - prefill[PREFIX:]).max()
    p = torch.tensor([prompt_ids])
    # no end-of-generation token stops it (min_new_tokens would instead forbid them, which Kiln's ignoreEos does not)
    model.generation_config.eos_token_id = None
    gen = model.generate(p, attention_mask=torch.ones_like(p), max_new_tokens=CONTINUATION, do_sample=False,
                         output_logits=True, return_dict_in_generate=True, pad_token_id=0)
    continuation = gen.sequences[0, len(prompt_ids):].tolist()
    margins = []
    for step in gen.logits:
        top2 = torch.topk(step[0], 2).values
        margins.append(float(top2[0] - top2[1]))
    assert len(continuation) == CONTINUATION and min(margins) > MIN_MARGIN, (continuation, min(margins))
    # how well-conditioned the logits are: float32 against float64 (the tests' tolerance is judged against it)
    f64 = copy.deepcopy(model).double()(ids).logits[0].numpy()
    print(f"  max |float32 - float64| of the prefill logits: {np.abs(prefill - f64).max():.1e}")
    return prefill, decode, continuation, min(margins)


def save_refs(folder, prefill, decode, prompt, prompt_ids, continuation, margin):
    os.makedirs(folder, exist_ok=True)
    np.save(os.path.join(folder, "prefill.npy"), prefill.astype("<f4"))
    np.save(os.path.join(folder, "decode.npy"), decode.astype("<f4"))
    write_json(os.path.join(folder, "greedy.json"), {"prompt": prompt, "prompt_ids": prompt_ids,
                                                     "continuation": continuation, "min_margin": margin})


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=1)
        f.write("\n")


def generate(name, tok, tok_meta, tok_config, variants):
    out = os.path.join(ROOT, name)
    hf_dir = os.path.join(out, "hf")
    os.makedirs(hf_dir)
    specials = tok_config
    bos = tok.token_to_id(specials["bos_token"]) if specials.get("bos_token") else None
    eos = tok.token_to_id(specials["eos_token"])
    model = make_model(name, tok.get_vocab_size(), bos, eos)
    # saved as bf16, as published checkpoints are; the f32 model holds exactly those values. A copy is cast, since
    # casting the model would round its RoPE inv_freq buffer to bf16 too
    copy.deepcopy(model).to(torch.bfloat16).save_pretrained(hf_dir)
    tok.save(os.path.join(hf_dir, "tokenizer.json"))
    write_json(os.path.join(hf_dir, "tokenizer_config.json"), tok_config)

    seq_ids = tok.encode(SEQUENCE_TEXT, add_special_tokens=True).ids[:SEQUENCE_LEN]
    assert len(seq_ids) == SEQUENCE_LEN, seq_ids
    write_json(os.path.join(out, "sequence.json"), {"text": SEQUENCE_TEXT, "ids": seq_ids, "prefix": PREFIX})
    prompt_ids = tok.encode(PROMPT, add_special_tokens=True).ids

    refs = references(model, seq_ids, prompt_ids)
    save_refs(os.path.join(out, "ref-f32"), refs[0], refs[1], PROMPT, prompt_ids, refs[2], refs[3])
    print(f"{name}: vocab {tok.get_vocab_size()}, sequence {seq_ids}, greedy min margin {refs[3]:.4f}")

    if name == "mistral":  # the window must change the answer, else the test could not tell
        cfg = model.config
        unwindowed = type(model)(type(cfg).from_dict({**cfg.to_dict(), "sliding_window": None})).to(torch.float32).eval()
        unwindowed.load_state_dict(model.state_dict())
        with torch.no_grad():
            full = unwindowed(torch.tensor([seq_ids])).logits[0].numpy()
        diff = np.abs(full - refs[0]).max(axis=1)
        assert diff[:cfg.sliding_window].max() < 1e-4 and diff[cfg.sliding_window:].min() > 1e-2, diff

    for qname in variants:
        path = os.path.join(out, f"{name}-{qname}.gguf")
        write_gguf(path, name, model, tok_meta, qname)
        back = model_from_gguf(path, name, model)
        r = references(back, seq_ids, prompt_ids)
        if qname == "f32":  # the very same numbers: the safetensors reference serves the file too
            assert np.array_equal(r[0], refs[0]) and r[2] == refs[2], np.abs(r[0] - refs[0]).max()
        else:
            save_refs(os.path.join(out, f"ref-{qname}"), r[0], r[1], PROMPT, prompt_ids, r[2], r[3])
            print(f"{name} {qname}: max |logit - f32 logit| {np.abs(r[0] - refs[0]).max():.4f}, "
                  f"greedy {'same as' if r[2] == refs[2] else 'differs from'} f32, min margin {r[3]:.4f}")


def main():
    torch.manual_seed(0)
    if os.path.isdir(ROOT):
        shutil.rmtree(ROOT)
    os.makedirs(ROOT)
    generate("llama", *llama3_tokenizer(), ["f32", "q8_0"])
    with tempfile.TemporaryDirectory() as workdir:
        generate("mistral", *spm_tokenizer(workdir), ["f16"])
    generate("qwen2", *qwen2_tokenizer(), ["q8_0", "q4_0"])
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(ROOT) for f in fs)
    print(f"{ROOT}: {total} bytes")


if __name__ == "__main__":
    main()
