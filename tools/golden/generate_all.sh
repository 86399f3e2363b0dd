#!/usr/bin/env bash
# Regenerates every golden file: python3 with NumPy (and PyTorch where a generator needs it).
set -euo pipefail
cd "$(dirname "$0")"
for g in gen_*.py; do python3 "$g"; done
