"""Reference tokenizations for kiln-llm's tokenizers, computed with sentencepiece and Hugging Face `tokenizers`.

Writes kiln-llm/src/test/resources/tokenizer/<name>/... so the Java tests (dev.kiln.llm.tokenizer) need no Python.
Run with `python3 tools/golden/gen_tokenizers.py` (needs sentencepiece, tokenizers, transformers and gguf; offline).

Training text: the licence texts Debian ships in /usr/share/common-licenses (GPL-3, Apache-2.0, MPL-2.0; each
licence permits verbatim copies) and CPython's own LICENSE.txt (PSF licence), plus the short multilingual
paragraph below, written for this script. Nothing is downloaded.

Tokenizers (small vocabularies so the resources stay small):
  spm      SentencePiece BPE with byte fallback, trained the way Llama 2's tokenizer.model is configured
           (identity normalisation, dummy prefix, no whitespace cleanup, split digits). Written as
           gguf_metadata.json: the GGUF key/value map llama.cpp's converter produces (gguf.vocab.SentencePieceVocab
           reads tokens, scores and token types). Expected ids come from sentencepiece itself; text containing
           control tokens is split on them first and each fragment encoded separately, which is what llama.cpp
           does (it adds the dummy-prefix space after every control token, as sentencepiece does per call).
           Also written as tokenizer.json in both forms transformers has produced for Llama 2 (the legacy
           Prepend+Replace normaliser, and the Metaspace pre-tokenizer with prepend_scheme "first"), with
           expected ids from Hugging Face `tokenizers`.
  llama3   byte-level BPE trained with Hugging Face `tokenizers` and Llama 3's split regex, ignore_merges,
           Llama 3's special tokens appended after the learned vocabulary, BOS added by a TemplateProcessing.
  qwen2    the same with Qwen2's regex (single digits), an NFC normaliser and Qwen2's special tokens, no BOS.
  smollm   llama3's vocabulary under SmolLM's pre-tokenizer (single digits, then the GPT-2 regex).
  gpt2     llama3's vocabulary under GPT-2's byte-level pre-tokenizer.
  splits   single pre-tokenizer steps (Split behaviours, Digits, Metaspace) on short texts, by Hugging Face.
  utf8     random byte strings and Python's lossy UTF-8 decoding of them (what decoders must do with bad bytes).
For the byte-level ones gguf_metadata.json is the map convert_hf_to_gguf.py writes (tokens, token types with
special added tokens as CONTROL and others as USER_DEFINED, merges as "a b" strings, tokenizer.ggml.pre).
The GGUF expectations come from the same Hugging Face tokenizer with its normaliser removed, because llama.cpp
applies none (this only differs for Qwen2's NFC).

cases.json: {"cases": [{"text", "add_special", "parse_special", "ids", "decoded", "decoded_skip"}],
             "gguf_cases": [...same...] (byte-level only), "decode_cases": [{"ids", "decoded"}],
             "pre_tokenized": [{"text", "pieces"}] (the pre-tokenizer's own cut, where there is a pre-tokenizer)}
  decoded      = the reference decode with special tokens rendered (HF skip_special_tokens=False)
  decoded_skip = with special tokens left out (HF skip_special_tokens=True; sentencepiece's decode), or null
                 where the reference's own rendering differs by design (sentencepiece's " ⁇ " for <unk>)
"""
import json
import os
import random
import shutil
import sysconfig
import tempfile

import sentencepiece as spm
from gguf import TokenType
from gguf.vocab import SentencePieceVocab
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers.convert_slow_tokenizer import SentencePieceExtractor

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                    "kiln-llm", "src", "test", "resources", "tokenizer")

SOURCES = ["/usr/share/common-licenses/GPL-3", "/usr/share/common-licenses/Apache-2.0",
           "/usr/share/common-licenses/MPL-2.0", os.path.join(sysconfig.get_paths()["stdlib"], "LICENSE.txt")]

UNICODE_TEXT = """\
Le café est très bon, mais la crème brûlée est meilleure. Ça coûte dix euros.
Der Bär läuft über die Straße und isst Käse. Grüße aus München!
El niño comió piña en el año pasado. ¿Dónde está la biblioteca?
Η γρήγορη καφέ αλεπού πηδά πάνω από τον σκύλο.
Быстрая коричневая лиса прыгает через ленивую собаку.
日本語のテキストです。東京は大きい都市です。
中文文本的例子，我们正在测试分词器。
한국어 문장도 있습니다.
مرحبا بالعالم، هذا نص عربي قصير.
שלום עולם, זה טקסט בעברית.
Emoji: 👋 😀 🎉 ❤️ 👍🏽 🇫🇷
"""

LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
               r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

LLAMA3_SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                   "<|eot_id|>", "<|eom_id|>"]
QWEN2_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
USER_DEFINED = "<|ud|>"  # an added token that is not special: always split out, even without parse_special

# Chat templates written for these fixtures (the tests only check they are exposed verbatim).
LLAMA2_TEMPLATE = "{% for m in messages %}{% if m['role'] == 'user' %}[INST] {{ m['content'] }} [/INST]" \
                  "{% else %}{{ m['content'] }}</s>{% endif %}{% endfor %}"
LLAMA3_TEMPLATE = "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n" \
                  "{{ m['content'] }}<|eot_id|>{% endfor %}"
QWEN2_TEMPLATE = "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"

TEXTS = [
    "",
    "Hello world",
    " Hello world",
    "Hello  world   with    runs     of      spaces",
    "   ",
    " ",
    "\n",
    " \n ",
    "tabs\tand\nnewlines\r\n\r\nand\n\n\nmore\t\t end",
    "trailing spaces   ",
    "I'm sure you've seen they'll do it; we'd, she's, THEY'RE, I'M, You'Ve, he\u017f",
    "'s 's' ''s x'",
    "1 12 123 1234 12345 3.14159 2024-11-25 \u0663\u0664\u0665 \u2460\u2461 \U0001d7d9\U0001d7da",
    "caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00c5ngstr\u00f6m fa\u00e7ade \u00c9COLE",
    "cafe\u0301 combining: e\u0301 n\u0303 A\u030a",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3068\u4e2d\u6587\u6587\u672c\uff0c\u8fd8\u6709\ud55c\uad6d\uc5b4\ub3c4 \uc788\uc2b5\ub2c8\ub2e4\u3002",
    "\U0001f44b\U0001f3fd hello \U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466 family "
    "\U0001f3f3\ufe0f\u200d\U0001f308 flag 1\ufe0f\u20e3 \U0001f1eb\U0001f1f7",
    "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645 \u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd (RTL) \u200f\u200e",
    "The quick brown fox jumps over the lazy dog. THE QUICK BROWN FOX!",
    "Unicode spaces: a\u00a0b\u3000c\u2028d\u0085e\u200bf\u2009g\u202fh",
    "runs: a\u3000\u3000\u3000b x\u00a0\u00a0 y\u2028\u2028z\u0085\u0085 \u2003\u2003w\u200b\u200b",
    "folding: it'\u017f\u017f ok '\u017ft THEY'LL he'\u212a \u0130'S",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "def f(x):\n    return x**2  # comment\n\n\tif x != 0: print(\"ok\")\n",
    "\U0001d518\U0001d52b\U0001d526\U0001d520\U0001d52c\U0001d521\U0001d522 \U0001d54c\U0001d55f",
    "control \u0001\u0007\u007f chars",
    "\u200d",
    "GNU General Public License, version 3; the Software is provided \"AS IS\".",
    "Licensed under the Apache License, Version 2.0 (the \"License\");",
    "<s> </s> <unk> <0x0A> plain-looking markup",
]

# Only pre-tokenized (the pieces the regexes cut), where small vocabularies would hide a different cut.
PRE_TEXTS = [
    "a\u3000\u3000\u3000b \u00a0\u00a0x\u00a0 \u2028\u2028y\u0085 \u1680\u1680z \u205f\u205f\u3000",
    "it'\u017f\u017f '\u017ft 'S 'T 'RE 'Ve 'LL 'D 'M '\u212a x'\u0130s \u00df's",
    "12345678 \u0661\u0662\u0663\u0664 \u2460\u2461\u2462 \u2167\u2168 \U0001d7d9\U0001d7da\U0001d7db\U0001d7dc \u00bd\u00b2",
    "!!!\n\n\r\n  ...\t\t\n \u00a0\n x\r\r\ny",
    "\U0001f468\u200d\U0001f469 \u0915\u094d\u0937 \u0e01\u0e34 a\u0301\u0302 \u05d0\u05b7 \u200d\u200c",
    "__init__ x_y-z +=  <=> ~~ $$ ^^ || `code`",
]

SPM_SPECIAL_TEXTS = [
    "Hello</s>world<s> again",
    "<s>start",
    "end</s>",
    "x<unk>y",
    " <s> spaced </s> ",
]

BYTE_LEVEL_SPECIAL_TEXTS = {
    "llama3": [
        "<|begin_of_text|>Hi<|eot_id|>\n<|start_header_id|>user<|end_header_id|>\n\nhey",
        "before <|eot_id|> after",
        "<|eom_id|><|eot_id|>",
        "user " + USER_DEFINED + " defined" + USER_DEFINED,
        "<|begin_of_text|",
    ],
    "qwen2": [
        "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nhi<|im_end|>",
        "a <|endoftext|> b",
        "user " + USER_DEFINED + " defined" + USER_DEFINED,
    ],
}


def training_lines():
    lines = []
    for path in SOURCES:
        with open(path, encoding="utf-8") as f:
            lines += f.read().splitlines()
    lines += UNICODE_TEXT.splitlines() * 3
    return [line for line in lines if line.strip()]


def modes(texts, special_texts):
    """(text, add_special, parse_special): every text plainly and with both flags; special texts in all four."""
    out = [(t, False, False) for t in texts] + [(t, True, True) for t in texts]
    for t in special_texts:
        out += [(t, a, p) for a in (False, True) for p in (False, True)]
    return out


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")


# ---------------------------------------------------------------- SentencePiece (Llama 2 / Mistral style)

def train_spm(workdir):
    corpus = os.path.join(workdir, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write("\n".join(training_lines()) + "\n")
    spm.SentencePieceTrainer.Train(
        input=corpus, model_prefix=os.path.join(workdir, "tokenizer"), model_type="bpe", vocab_size=1000,
        character_coverage=1.0, byte_fallback=True, split_digits=True, normalization_rule_name="identity",
        remove_extra_whitespaces=False, add_dummy_prefix=True, allow_whitespace_only_pieces=True,
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1, num_threads=1, minloglevel=2)
    return os.path.join(workdir, "tokenizer.model")


def spm_gguf_metadata(model_dir):
    vocab = SentencePieceVocab(__import__("pathlib").Path(model_dir))
    tokens, scores, types = [], [], []
    for text, score, toktype in vocab.all_tokens():
        tokens.append(text.decode("utf-8"))
        scores.append(float(score))
        types.append(int(toktype))
    return {
        "general.architecture": "llama",
        "tokenizer.ggml.model": "llama",
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.scores": scores,
        "tokenizer.ggml.token_type": types,
        "tokenizer.ggml.bos_token_id": 1,
        "tokenizer.ggml.eos_token_id": 2,
        "tokenizer.ggml.unknown_token_id": 0,
        "tokenizer.ggml.add_bos_token": True,
        "tokenizer.ggml.add_eos_token": False,
        "tokenizer.chat_template": LLAMA2_TEMPLATE,
    }


def spm_encode_llama_cpp(sp, meta, text, add_special, parse_special):
    """sentencepiece ids, with llama.cpp's split on control/unknown token texts (longest first) when parsing."""
    ids = [1] if add_special else []
    specials = {}
    if parse_special:
        for i, (tok, typ) in enumerate(zip(meta["tokenizer.ggml.tokens"], meta["tokenizer.ggml.token_type"])):
            if typ in (TokenType.CONTROL, TokenType.UNKNOWN):
                specials[tok] = i
    pos, start = 0, 0
    while pos < len(text):
        match = max((s for s in specials if text.startswith(s, pos)), key=len, default=None)
        if match is None:
            pos += 1
            continue
        if pos > start:
            ids += sp.encode(text[start:pos])
        ids.append(specials[match])
        pos += len(match)
        start = pos
    if start < len(text):
        ids += sp.encode(text[start:])
    return ids


def hf_from_spm(model_file, metaspace):
    """tokenizer.json as transformers' LlamaConverter writes it (legacy normaliser, or Metaspace when not legacy)."""
    kw = SentencePieceExtractor(model_file).extract(models.BPE)
    tok = Tokenizer(models.BPE(kw["vocab"], kw["merges"], unk_token="<unk>", fuse_unk=True, byte_fallback=True,
                               dropout=None))
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in ("<unk>", "<s>", "</s>")])
    if metaspace:
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first", split=False)
    else:
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(content=" ", left=1, right=0)])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                       special_tokens=[("<s>", 1)])
    return tok


def pre_tokenized(tok):
    """The pieces of the tokenizer's own pre-tokenizer (no normaliser, no added-token split) for each text."""
    if tok.pre_tokenizer is None:
        return []
    return [{"text": t, "pieces": [p for p, _ in tok.pre_tokenizer.pre_tokenize_str(t)]} for t in TEXTS + PRE_TEXTS]


def hf_cases(tok, inputs):
    cases = []
    for text, add, parse in inputs:
        tok.encode_special_tokens = not parse
        ids = tok.encode(text, add_special_tokens=add).ids
        cases.append({"text": text, "add_special": add, "parse_special": parse, "ids": ids,
                      "decoded": tok.decode(ids, skip_special_tokens=False),
                      "decoded_skip": tok.decode(ids, skip_special_tokens=True)})
    tok.encode_special_tokens = False
    return cases


def gen_spm(workdir):
    model_file = train_spm(workdir)
    sp = spm.SentencePieceProcessor(model_file=model_file)
    meta = spm_gguf_metadata(workdir)
    out = os.path.join(ROOT, "spm")
    write_json(os.path.join(out, "gguf_metadata.json"), meta)
    inputs = modes(TEXTS, SPM_SPECIAL_TEXTS)
    cases = []
    for text, add, parse in inputs:
        ids = spm_encode_llama_cpp(sp, meta, text, add, parse)
        skip = None if 0 in ids else sp.decode(ids)
        cases.append({"text": text, "add_special": add, "parse_special": parse, "ids": ids,
                      "decoded": None, "decoded_skip": skip})
    write_json(os.path.join(out, "cases.json"), {"cases": cases})
    for metaspace, name in ((False, "spm_hf_legacy"), (True, "spm_hf_metaspace")):
        tok = hf_from_spm(model_file, metaspace)
        os.makedirs(os.path.join(ROOT, name), exist_ok=True)
        tok.save(os.path.join(ROOT, name, "tokenizer.json"))
        write_json(os.path.join(ROOT, name, "tokenizer_config.json"), {
            "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "add_bos_token": True,
            "add_eos_token": False, "chat_template": LLAMA2_TEMPLATE})
        hc = hf_cases(tok, inputs)
        for c in hc:  # the Metaspace decoder drops every "▁" of the first token, a quirk not followed
            if metaspace:
                c["decoded_skip"] = None
            c["decoded"] = None
        write_json(os.path.join(ROOT, name, "cases.json"), {"cases": hc, "pre_tokenized": pre_tokenized(tok)})
        same = sum(h["ids"] == c["ids"] for h, c in zip(hc, cases))
        print(f"{name}: {len(hc)} cases; ids equal to sentencepiece/llama.cpp in {same}")
    print(f"spm: {len(meta['tokenizer.ggml.tokens'])} tokens, {len(cases)} cases")


# ---------------------------------------------------------------- byte-level BPE (Llama 3, Qwen2, SmolLM, GPT-2)

def byte_level_split(pattern):
    return pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
                                    pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True,
                                                             use_regex=False)])


def train_byte_level(pattern, ignore_merges, specials, nfc):
    tok = Tokenizer(models.BPE(ignore_merges=ignore_merges))
    if nfc:
        tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = byte_level_split(pattern)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1000, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(training_lines(), trainer)
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in specials])
    tok.add_tokens([AddedToken(USER_DEFINED, normalized=False, special=False)])
    return tok


def byte_level_gguf_metadata(tok, pre, bos, eos, add_bos, template):
    """The key/value map convert_hf_to_gguf.py writes for a byte-level BPE vocabulary."""
    j = json.loads(tok.to_str())
    added = {a["id"]: a for a in j["added_tokens"]}
    vocab = tok.get_vocab(with_added_tokens=True)
    by_id = {i: t for t, i in vocab.items()}
    tokens, types = [], []
    for i in range(len(by_id)):
        tokens.append(by_id[i])
        a = added.get(i)
        types.append(int(TokenType.NORMAL if a is None else TokenType.CONTROL if a["special"]
                         else TokenType.USER_DEFINED))
    merges = [m if isinstance(m, str) else " ".join(m) for m in j["model"]["merges"]]
    meta = {
        "general.architecture": "llama" if pre != "qwen2" else "qwen2",
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.pre": pre,
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.token_type": types,
        "tokenizer.ggml.merges": merges,
        "tokenizer.ggml.bos_token_id": vocab[bos],
        "tokenizer.ggml.eos_token_id": vocab[eos],
        "tokenizer.ggml.add_bos_token": add_bos,
        "tokenizer.chat_template": template,
    }
    if pre == "qwen2":
        meta["tokenizer.ggml.padding_token_id"] = vocab["<|endoftext|>"]
    return meta


def decode_cases(tok, text):
    """Raw id sequences, including single bytes of multi-byte characters (lossy UTF-8 decoding)."""
    enc = tok.encode(text, add_special_tokens=False).ids
    vocab = json.loads(tok.to_str())["model"]["vocab"]
    b2u = byte_to_unicode()

    def byte_id(b):
        return vocab[b2u[b]]
    seqs = [enc, enc[::-1], [byte_id(0xE2)], [byte_id(0xE2), byte_id(0x82)], [byte_id(0xE2), byte_id(0x82), byte_id(0xAC)],
            [byte_id(0xF0), byte_id(0x9F), byte_id(0x91)] + enc[:3], [byte_id(0xC0), byte_id(0xAF)],
            [byte_id(0xED), byte_id(0xA0), byte_id(0x80)], [byte_id(0xFF), byte_id(0x41)]]
    return [{"ids": s, "decoded": tok.decode(s, skip_special_tokens=False)} for s in seqs]


def byte_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def gen_byte_level(name, tok, pre, special_texts, gguf_meta, config):
    out = os.path.join(ROOT, name)
    os.makedirs(out, exist_ok=True)
    tok.save(os.path.join(out, "tokenizer.json"))
    write_json(os.path.join(out, "tokenizer_config.json"), config)
    write_json(os.path.join(out, "gguf_metadata.json"), gguf_meta)
    inputs = modes(TEXTS, special_texts)
    cases = hf_cases(tok, inputs)
    plain = Tokenizer.from_str(tok.to_str())
    plain.normalizer = None  # llama.cpp applies no normaliser to GGUF byte-level vocabularies
    gguf_cases = hf_cases(plain, inputs)
    dec = decode_cases(tok, "caf\u00e9 \u65e5\u672c \U0001f44b\U0001f3fd ok")
    write_json(os.path.join(out, "cases.json"), {"cases": cases, "gguf_cases": gguf_cases, "decode_cases": dec,
                                                 "pre_tokenized": pre_tokenized(tok)})
    print(f"{name}: {tok.get_vocab_size()} tokens, {len(cases)} cases, {len(dec)} decode cases")


def gen_variant(name, base, pre_tokenizer, pre, special_texts):
    """llama3's vocabulary under another pre-tokenizer: only the expectations and the pre-tokenizer are stored."""
    tok = Tokenizer.from_str(base.to_str())
    tok.pre_tokenizer = pre_tokenizer
    inputs = modes(TEXTS, special_texts)
    cases = hf_cases(tok, inputs)
    out = os.path.join(ROOT, name)
    write_json(os.path.join(out, "cases.json"), {
        "base": "llama3", "gguf_pre": pre, "pre_tokenizer": json.loads(tok.to_str())["pre_tokenizer"],
        "cases": cases, "gguf_cases": cases, "pre_tokenized": pre_tokenized(tok)})
    print(f"{name}: {len(cases)} cases on llama3's vocabulary")


def gen_utf8():
    """Random byte strings rich in lead and continuation bytes, decoded by Python (the Unicode maximal-subpart
    practice, as Rust's from_utf8_lossy behind Hugging Face's decoders)."""
    rng = random.Random(14)
    interesting = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC,
                   0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF]
    cases = []
    for _ in range(400):
        n = rng.randint(0, 12)
        data = bytes(rng.choice(interesting) if rng.random() < 0.7 else rng.randrange(256) for _ in range(n))
        cases.append({"bytes": list(data), "decoded": data.decode("utf-8", errors="replace")})
    write_json(os.path.join(ROOT, "utf8", "cases.json"), {"cases": cases})
    print(f"utf8: {len(cases)} byte strings")


def gen_splits():
    """Hugging Face's Split behaviours, Digits and Metaspace on their own, for the pre-tokenizer steps no trained
    fixture uses."""
    texts = ["a-b--c-", "-x", "", "--", "ab", " hello  world   x ", "a1b22c333 \u0663\u0664 \u2460"]
    steps = []
    for pattern in ["-", " ", "\\s+", "\\d"]:
        for behavior in ["isolated", "removed", "merged_with_previous", "merged_with_next", "contiguous"]:
            for invert in (False, True):
                regex = pattern if pattern in ("-", " ") else None
                pre = pre_tokenizers.Split(regex if regex else Regex(pattern), behavior=behavior, invert=invert)
                steps.append(({"type": "Split", "pattern": {"String": regex} if regex else {"Regex": pattern},
                               "behavior": behavior.title().replace("_", ""), "invert": invert}, pre))
    for individual in (False, True):
        steps.append(({"type": "Digits", "individual_digits": individual},
                      pre_tokenizers.Digits(individual_digits=individual)))
    for scheme in ("always", "first", "never"):
        for split in (False, True):
            steps.append(({"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": scheme, "split": split},
                          pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme=scheme, split=split)))
    cases = [{"pre_tokenizer": js, "text": t, "pieces": [p for p, _ in pre.pre_tokenize_str(t)]}
             for js, pre in steps for t in texts]
    write_json(os.path.join(ROOT, "splits", "cases.json"), {"cases": cases})
    print(f"splits: {len(cases)} cases")


def main():
    if os.path.isdir(ROOT):
        shutil.rmtree(ROOT)
    gen_utf8()
    gen_splits()
    with tempfile.TemporaryDirectory() as workdir:
        gen_spm(workdir)

    llama3 = train_byte_level(LLAMA3_SPLIT, True, LLAMA3_SPECIALS, nfc=False)
    llama3.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B",
                                      special_tokens=[("<|begin_of_text|>", llama3.token_to_id("<|begin_of_text|>"))])])
    gen_byte_level("llama3", llama3, "llama-bpe", BYTE_LEVEL_SPECIAL_TEXTS["llama3"],
                   byte_level_gguf_metadata(llama3, "llama-bpe", "<|begin_of_text|>", "<|eot_id|>", True,
                                            LLAMA3_TEMPLATE),
                   {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>", "chat_template": LLAMA3_TEMPLATE})

    qwen2 = train_byte_level(QWEN2_SPLIT, False, QWEN2_SPECIALS, nfc=True)
    qwen2.post_processor = processors.ByteLevel(trim_offsets=False)
    gen_byte_level("qwen2", qwen2, "qwen2", BYTE_LEVEL_SPECIAL_TEXTS["qwen2"],
                   byte_level_gguf_metadata(qwen2, "qwen2", "<|endoftext|>", "<|im_end|>", False, QWEN2_TEMPLATE),
                   {"bos_token": None, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
                    "chat_template": QWEN2_TEMPLATE})

    gen_variant("smollm", llama3, pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)]),
        "smollm", BYTE_LEVEL_SPECIAL_TEXTS["llama3"])
    gen_variant("gpt2", llama3, pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
                "gpt-2", BYTE_LEVEL_SPECIAL_TEXTS["llama3"])


if __name__ == "__main__":
    main()
