"""Shared writer for Kiln's golden test cases.

Each generator script (gen_<group>.py) builds cases with NumPy (or PyTorch where noted) and writes
kiln-core/src/test/resources/golden/<group>.json. The Java tests (dev.kiln.golden) read these files,
so the Java suite needs no Python.

A case: {"name": unique id, "op": catalog key on the Java side, "args": {...} op parameters,
         "inputs": [array...], "outputs": [array...], optional "rtol"/"atol"}
An array: {"dtype": "f32"|"i64"|..., "shape": [...], "data": [flat C-order values]}
NaN and infinities are written as NaN / Infinity / -Infinity.
"""
import json
import os

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                    "kiln-core", "src", "test", "resources", "golden")

_NAMES = {
    np.dtype(np.bool_): "bool", np.dtype(np.int8): "i8", np.dtype(np.uint8): "u8",
    np.dtype(np.int16): "i16", np.dtype(np.uint16): "u16", np.dtype(np.int32): "i32",
    np.dtype(np.uint32): "u32", np.dtype(np.int64): "i64", np.dtype(np.uint64): "u64",
    np.dtype(np.float16): "f16", np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
}


def array(a, dtype=None):
    """An array record. dtype may name 'bf16' for float values already rounded to bfloat16."""
    a = np.asarray(a)
    name = dtype or _NAMES[a.dtype]
    flat = a.reshape(-1)
    if a.dtype.kind == "f":
        data = [float(v) for v in flat]
    elif a.dtype == np.uint64:
        data = [int(v) - (1 << 64) if int(v) >= (1 << 63) else int(v) for v in flat]
    else:
        data = [int(v) for v in flat]
    return {"dtype": name, "shape": [int(d) for d in a.shape], "data": data}


class Cases:
    """Collects cases of one group; names must be unique."""

    def __init__(self, group):
        self.group = group
        self.cases = []
        self._names = set()

    def add(self, name, op, inputs, outputs, rtol=None, atol=None, **args):
        if name in self._names:
            raise ValueError("duplicate case " + name)
        self._names.add(name)
        if not isinstance(outputs, (list, tuple)):
            outputs = [outputs]
        case = {"name": name, "op": op, "args": args,
                "inputs": [x if isinstance(x, dict) else array(x) for x in inputs],
                "outputs": [x if isinstance(x, dict) else array(x) for x in outputs]}
        if rtol is not None:
            case["rtol"] = rtol
        if atol is not None:
            case["atol"] = atol
        self.cases.append(case)

    def write(self):
        os.makedirs(ROOT, exist_ok=True)
        path = os.path.join(ROOT, self.group + ".json")
        with open(path, "w") as f:
            json.dump({"group": self.group, "cases": self.cases}, f, allow_nan=True, separators=(",", ":"))
            f.write("\n")
        print(f"{path}: {len(self.cases)} cases, {len({c['op'] for c in self.cases})} ops")


def rng(seed=0):
    return np.random.default_rng(seed)
