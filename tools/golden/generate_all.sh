#!/usr/bin/env bash
# Regenerates every golden file: python3 with NumPy (and PyTorch where a generator needs it).
set -euo pipefail
cd "$(dirname "$0")"
# /usr/bin/python3 is the interpreter with both NumPy and PyTorch on these machines
py=${PYTHON:-/usr/bin/python3}
# gen_gguf.py needs llama.cpp's gguf package (and safetensors, transformers), which that interpreter lacks
for g in gen_*.py; do [ "$g" = gen_gguf.py ] || "$py" "$g"; done
"${GGUF_PYTHON:-python3}" gen_gguf.py
