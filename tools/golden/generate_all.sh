#!/usr/bin/env bash
# Regenerates every golden file: python3 with NumPy (and PyTorch where a generator needs it).
set -euo pipefail
cd "$(dirname "$0")"
# /usr/bin/python3 is the interpreter with both NumPy and PyTorch on these machines
py=${PYTHON:-/usr/bin/python3}
# the language-model references (gen_gguf.py, gen_tokenizers.py, gen_llm_models.py) need llama.cpp's gguf package, sentencepiece,
# tokenizers, safetensors and transformers, which the python3 on PATH has and that interpreter lacks; so do the ONNX
# operator input counts (gen_onnx_arity.py, kiln-onnx's onnx-arity.tsv), the Scan models (gen_onnx_control_flow.py) and the PyTorch
# exports (gen_torch_exports.py, torch too), which need the onnx package (and onnxruntime)
for g in gen_*.py; do
  case "$g" in gen_gguf.py | gen_tokenizers.py | gen_llm_models.py | gen_onnx_arity.py | gen_onnx_control_flow.py | gen_torch_exports.py) continue ;; esac
  "$py" "$g"
done
"${LLM_PYTHON:-python3}" gen_gguf.py
"${LLM_PYTHON:-python3}" gen_tokenizers.py
"${LLM_PYTHON:-python3}" gen_llm_models.py
"${LLM_PYTHON:-python3}" gen_onnx_arity.py
"${LLM_PYTHON:-python3}" gen_onnx_control_flow.py
"${LLM_PYTHON:-python3}" gen_torch_exports.py
