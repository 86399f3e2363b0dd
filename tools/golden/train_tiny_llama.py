"""Trains the tiny Llama that `./kiln demo` ends with, and the reference its test checks (issue 14).

A model that writes text, made here offline in minutes on the CPU:
  corpus     the docstrings of Python's standard library on this machine (modules, classes, functions and methods:
             PSF License, freely redistributable), ASCII only
  tokenizer  SentencePiece BPE with byte fallback (Llama 2's configuration, gen_llm_models.spm_tokenizer's options),
             1,024 pieces, trained on that corpus by `sentencepiece`
  model      transformers' LlamaForCausalLM: hidden 256, 4 layers, 8 query heads and 4 key/value heads of 32, SwiGLU of
             704, RMSNorm, tied embeddings, context 256 (about 3.4 million parameters), trained with AdamW for a fixed
             time (TRAIN_SECONDS, default 420) on sequences of 128 tokens; seeded, so a run is repeatable on one machine
  file       GGUF Q8_0 (gen_llm_models.write_gguf: llama.cpp's converter conventions, Q/K rows permuted), about 4 MB

Writes:
  kiln-cli/src/main/resources/dev/kiln/cli/tiny-llama-q8_0.gguf   the model `./kiln demo` generates with
  kiln-cli/src/test/resources/tiny-trained/greedy.json             {"prompt", "prompt_ids", "continuation": 48 greedy
                                                                   ids, "min_margin"} from transformers running the
                                                                   weights read back from that GGUF file and dequantised
                                                                   (gen_llm_models.model_from_gguf): Kiln's greedy
                                                                   continuation must equal it

Run with the python3 on PATH (torch, transformers 5, sentencepiece, gguf 0.19; offline):
  python3 tools/golden/train_tiny_llama.py [--seconds 420]
"""
import argparse
import contextlib
import importlib
import inspect
import io
import json
import math
import os
import sys
import tempfile
import time
import warnings

import sentencepiece as spm
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_llm_models as glm  # noqa: E402  (first: it tells transformers that torchvision is absent)
import gen_tokenizers as gt  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL_OUT = os.path.join(REPO, "kiln-cli/src/main/resources/dev/kiln/cli/tiny-llama-q8_0.gguf")
REF_OUT = os.path.join(REPO, "kiln-cli/src/test/resources/tiny-trained/greedy.json")
PROMPT = "Return the number of"
SEQ = 128


def corpus_text():
    """The standard library's docstrings, longest first within each module, ASCII only."""
    warnings.filterwarnings("ignore")
    skip = {"antigravity", "this", "idlelib", "tkinter", "turtledemo", "test", "lib2to3", "ensurepip", "venv", "pydoc_data"}
    docs, seen = [], set()
    for name in sorted(sys.stdlib_module_names):
        if name in skip or name.startswith("_"):
            continue
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                mod = importlib.import_module(name)
        except Exception:  # noqa: BLE001 (a module this platform lacks)
            continue
        objs = [mod]
        for k, v in sorted(vars(mod).items()):
            if k.startswith("_") or getattr(v, "__module__", None) != name:
                continue
            if inspect.isclass(v):
                objs.append(v)
                objs.extend(m for mk, m in sorted(vars(v).items()) if not mk.startswith("_") and inspect.isfunction(m))
            elif inspect.isfunction(v):
                objs.append(v)
        for o in objs:
            d = inspect.getdoc(o)
            if d and len(d) > 80 and d not in seen:
                seen.add(d)
                docs.append(d)
    text = "\n\n".join(docs)
    return "".join(c for c in text if ord(c) < 128)


def train_tokenizer(text, workdir):
    corpus = os.path.join(workdir, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write(text)
    spm.SentencePieceTrainer.Train(
        input=corpus, model_prefix=os.path.join(workdir, "tokenizer"), model_type="bpe", vocab_size=1024,
        character_coverage=1.0, byte_fallback=True, split_digits=True, normalization_rule_name="identity",
        remove_extra_whitespaces=False, add_dummy_prefix=True, allow_whitespace_only_pieces=True,
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1, num_threads=2, minloglevel=2, max_sentence_length=1 << 16)
    return spm.SentencePieceProcessor(model_file=os.path.join(workdir, "tokenizer.model"))


def make_model():
    cfg = LlamaConfig(vocab_size=1024, hidden_size=256, intermediate_size=704, num_hidden_layers=4, num_attention_heads=8,
                      num_key_value_heads=4, max_position_embeddings=256, rms_norm_eps=1e-5, tie_word_embeddings=True,
                      rope_theta=10000.0, bos_token_id=1, eos_token_id=2, attn_implementation="eager")
    torch.manual_seed(7)
    return LlamaForCausalLM(cfg)


def train(model, ids, seconds):
    torch.set_num_threads(2)
    data = torch.tensor(ids, dtype=torch.long)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, betas=(0.9, 0.95), weight_decay=0.05)
    g = torch.Generator().manual_seed(11)
    model.train()
    start, step, batch = time.time(), 0, 24
    while time.time() - start < seconds:
        frac = (time.time() - start) / seconds
        for group in opt.param_groups:  # warm-up, then cosine to a tenth
            group["lr"] = 2e-3 * min(1.0, step / 100) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))
        at = torch.randint(0, len(data) - SEQ - 1, (batch,), generator=g)
        x = torch.stack([data[i:i + SEQ] for i in at])
        loss = model(input_ids=x, labels=x).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 100 == 0:
            print(f"step {step}  loss {loss.item():.3f}  {time.time() - start:.0f} s", flush=True)
        step += 1
    model.eval()
    return step


@torch.no_grad()
def greedy(model, prompt_ids, n):
    ids, margins = list(prompt_ids), []
    for _ in range(n):
        logits = model(torch.tensor([ids])).logits[0, -1]
        top = torch.topk(logits, 2).values
        margins.append(float(top[0] - top[1]))
        ids.append(int(torch.argmax(logits)))
    return ids[len(prompt_ids):], min(margins)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=420)
    args = ap.parse_args()
    text = corpus_text()
    print(f"corpus: {len(text)} characters")
    with tempfile.TemporaryDirectory() as work:
        sp = train_tokenizer(text, work)
        ids = []
        for para in text.split("\n\n"):
            ids.extend([1] + sp.encode(para) + [2])
        print(f"tokens: {len(ids)}")
        model = make_model()
        print(f"parameters: {sum(p.numel() for p in model.parameters())}")
        steps = train(model, ids, args.seconds)
        print(f"trained {steps} steps")
        os.makedirs(os.path.dirname(MODEL_OUT), exist_ok=True)
        meta = gt.spm_gguf_metadata(work)
        meta["tokenizer.chat_template"] = gt.LLAMA2_TEMPLATE
        glm.write_gguf(MODEL_OUT, "llama", model, meta, "q8_0")
        back = glm.model_from_gguf(MODEL_OUT, "llama", model)
        prompt_ids = [1] + sp.encode(PROMPT)
        cont, margin = greedy(back, prompt_ids, 48)
        print("greedy:", PROMPT + sp.decode(cont))
        os.makedirs(os.path.dirname(REF_OUT), exist_ok=True)
        with open(REF_OUT, "w") as f:
            json.dump({"prompt": PROMPT, "prompt_ids": prompt_ids, "continuation": cont, "min_margin": margin}, f, indent=1)
            f.write("\n")
    print(f"{MODEL_OUT}: {os.path.getsize(MODEL_OUT)} bytes")


if __name__ == "__main__":
    main()
