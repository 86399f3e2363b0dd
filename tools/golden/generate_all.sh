#!/usr/bin/env bash
# Regenerates every golden file: python3 with NumPy (and PyTorch where a generator needs it).
set -euo pipefail
cd "$(dirname "$0")"
# /usr/bin/python3 is the interpreter with both NumPy and PyTorch on these machines
py=${PYTHON:-/usr/bin/python3}
for g in gen_*.py; do
  [ "$g" = gen_tokenizers.py ] && continue
  "$py" "$g"
done
# the tokenizer references need sentencepiece, tokenizers, transformers and gguf, which the python3 on PATH has
"${TOKENIZER_PYTHON:-python3}" gen_tokenizers.py
