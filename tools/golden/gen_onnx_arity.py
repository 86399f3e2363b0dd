"""Input counts of every ONNX operator version, for dev.kiln.onnx.GraphValidator.

Writes kiln-onnx/src/main/resources/dev/kiln/onnx/onnx-arity.tsv from the operator schemas of the installed onnx
package (onnx.defs.get_all_schemas_with_history()): one line per (domain, operator, since_version) of the
domains Kiln checks: ai.onnx (the default domain, written as "ai.onnx"), ai.onnx.ml and ai.onnx.preview.training
(Adagrad, Adam, Momentum). Kiln implements no com.microsoft (or other) operator (OnnxOps refuses every other domain), so
no other domain is listed.

Columns, tab-separated:
  domain     ai.onnx, ai.onnx.ml or ai.onnx.preview.training
  op         the operator type
  since      the opset version from which this version of the operator applies
  min        OpSchema.min_input: the fewest inputs a node may list (empty names included, as onnx.checker counts)
  max        OpSchema.max_input, or "unbounded" for a variadic last input (ONNX gives 2147483647)
  nonempty   how many leading inputs must be present and non-empty: the leading Single (required) formal
             inputs. onnx.checker refuses an empty name only at a Single input, so it is below min where an
             optional input comes first (Loop, Scan 8) and for variadic inputs (Concat [""] passes the checker).

Run with the python3 that has onnx (not /usr/bin/python3, which lacks it):
  python3 tools/golden/gen_onnx_arity.py
"""
import os

import onnx
from onnx import defs

DOMAINS = {"": "ai.onnx", "ai.onnx.ml": "ai.onnx.ml", "ai.onnx.preview.training": "ai.onnx.preview.training"}
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                   "kiln-onnx", "src", "main", "resources", "dev", "kiln", "onnx", "onnx-arity.tsv")
UNBOUNDED = 2147483647


def nonempty(schema):
    n = 0
    for p in schema.inputs:
        if p.option != defs.OpSchema.FormalParameterOption.Single:
            break
        n += 1
    return n


def main():
    rows = set()
    for s in defs.get_all_schemas_with_history():
        if s.domain not in DOMAINS:
            continue
        mx = "unbounded" if s.max_input == UNBOUNDED else str(s.max_input)
        assert s.min_input <= s.max_input and nonempty(s) <= s.min_input, s.name
        rows.add((DOMAINS[s.domain], s.name, s.since_version, s.min_input, mx, nonempty(s)))
    rows = sorted(rows)
    with open(OUT, "w", newline="\n") as f:
        f.write(f"# ONNX operator input counts, generated from onnx {onnx.__version__} by: python3 tools/golden/gen_onnx_arity.py\n")
        f.write("# columns: domain, op, since (opset), min inputs, max inputs (unbounded: variadic), leading inputs that must be non-empty\n")
        for r in rows:
            f.write("\t".join(str(v) for v in r) + "\n")
    print(f"{os.path.normpath(OUT)}: {len(rows)} operator versions, {len({(r[0], r[1]) for r in rows})} operators")


if __name__ == "__main__":
    main()
