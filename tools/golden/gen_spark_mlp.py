"""A tiny MLP in ONNX for kiln-spark's tests (kiln-spark/src/test/resources/mlp/model.onnx), and two variants of it:
mlp_fixed/model.onnx, the same weights exported for one row (every leading axis fixed at 1, as ResNet-50 of the shared
models is: kiln-spark runs it a row per run), and open_axis/model.onnx, whose input x is [batch, n] (a row of open size,
which kiln-spark refuses at plan time).

Two inputs with a symbolic leading axis 'batch', so one compiled plan serves any batch up to its maximum:
  x       f32[batch, 8]   the features
  offset  f32[batch, 3]   added to the logits (a second input column: the tests feed it as an ml Vector)
Two outputs of different dtypes, so the tests see typed output columns:
  logits  f32[batch, 3]   relu(x @ W1 + b1) @ W2 + b2 + offset
  label   i64[batch, 1]   argmax of logits (keepdims)

The Java tests compare Spark's results with Kiln run directly on the same file, so no expected outputs are stored;
the check here is only that ONNX Runtime (if installed) and NumPy agree on the model's meaning.

  python3 tools/golden/gen_spark_mlp.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "kiln-spark", "src", "test", "resources", "mlp")


def build(w1, b1, w2, b2, batch, features):
    nodes = [
        helper.make_node("Gemm", ["x", "W1", "B1"], ["h"]),
        helper.make_node("Relu", ["h"], ["hr"]),
        helper.make_node("Gemm", ["hr", "W2", "B2"], ["z"]),
        helper.make_node("Add", ["z", "offset"], ["logits"]),
        helper.make_node("ArgMax", ["logits"], ["label"], axis=1, keepdims=1),
    ]
    graph = helper.make_graph(
        nodes, "kiln_spark_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, features]),
         helper.make_tensor_value_info("offset", TensorProto.FLOAT, [batch, 3])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, 3]),
         helper.make_tensor_value_info("label", TensorProto.INT64, [batch, 1])],
        [numpy_helper.from_array(w1, "W1"), numpy_helper.from_array(b1, "B1"),
         numpy_helper.from_array(w2, "W2"), numpy_helper.from_array(b2, "B2")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="kiln gen_spark_mlp")
    model.ir_version = 7
    onnx.checker.check_model(model)
    return model


def save(model, folder):
    d = os.path.join(OUT, "..", folder)
    os.makedirs(d, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))


def main():
    rng = np.random.default_rng(15)
    w1 = rng.standard_normal((8, 16)).astype(np.float32) * 0.5
    b1 = rng.standard_normal(16).astype(np.float32) * 0.1
    w2 = rng.standard_normal((16, 3)).astype(np.float32) * 0.5
    b2 = rng.standard_normal(3).astype(np.float32) * 0.1
    model = build(w1, b1, w2, b2, "batch", 8)
    x = rng.standard_normal((5, 8)).astype(np.float32)
    off = rng.standard_normal((5, 3)).astype(np.float32)
    ref = np.maximum(x @ w1 + b1, 0) @ w2 + b2 + off
    try:
        import onnxruntime as ort
        got = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x, "offset": off})
        np.testing.assert_allclose(got[0], ref, rtol=1e-5, atol=1e-5)
        assert (got[1][:, 0] == ref.argmax(1)).all()
    except ImportError:
        pass
    save(model, "mlp")
    save(build(w1, b1, w2, b2, 1, 8), "mlp_fixed")
    save(build(w1, b1, w2, b2, "batch", "n"), "open_axis")


if __name__ == "__main__":
    main()
