"""Writes kiln-onnx's external-data test model (kiln-onnx/src/test/resources/external/).

A two-layer perceptron whose weights ONNX stores outside the model file, in one file beside it:
  y = Reshape((Relu(x @ W1 + b1) @ W2 + b2) * scale, shape)
W1, b1, W2, b2 (f32) and shape (i64) are initializers; scale is a Constant node's tensor attribute, stored
externally too (convert_attribute=True). Every tensor goes to weights.bin (size_threshold=0); the script checks
that each one starts at a multiple of its element size, so Kiln can use all of them in place.
The expected output comes from ONNX Runtime (on the model before its tensors moved out) and is checked
against NumPy; input.npy and expected.npy are what ExternalDataTest compares.

Run with a Python that has onnx, onnxruntime and NumPy:  python3 tools/onnx/gen_external_data.py
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "kiln-onnx", "src", "test", "resources", "external")
MODEL, WEIGHTS = "model.onnx", "weights.bin"

rng = np.random.default_rng(13)
w1 = rng.standard_normal((8, 16)).astype(np.float32)
b1 = rng.standard_normal(16).astype(np.float32)
w2 = rng.standard_normal((16, 4)).astype(np.float32)
b2 = rng.standard_normal(4).astype(np.float32)
shape = np.array([4, 2], dtype=np.int64)
scale = np.array([0.5, -1.0, 2.0, 0.25], dtype=np.float32)
x = rng.standard_normal((2, 8)).astype(np.float32)

nodes = [
    helper.make_node("MatMul", ["x", "W1"], ["h0"], name="mm1"),
    helper.make_node("Add", ["h0", "b1"], ["h1"], name="add1"),
    helper.make_node("Relu", ["h1"], ["h"], name="relu"),
    helper.make_node("MatMul", ["h", "W2"], ["y0"], name="mm2"),
    helper.make_node("Add", ["y0", "b2"], ["y1"], name="add2"),
    helper.make_node("Constant", [], ["scale"], name="scale", value=numpy_helper.from_array(scale, "scale")),
    helper.make_node("Mul", ["y1", "scale"], ["y2"], name="mul"),
    helper.make_node("Reshape", ["y2", "shape"], ["y"], name="reshape"),
]
inits = [numpy_helper.from_array(a, n) for a, n in [(w1, "W1"), (b1, "b1"), (w2, "W2"), (b2, "b2"), (shape, "shape")]]
graph = helper.make_graph(nodes, "external_mlp",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 2])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
onnx.checker.check_model(model)
model_bytes = model.SerializeToString()  # before save_model moves the tensors out

os.makedirs(OUT, exist_ok=True)
for f in (MODEL, WEIGHTS):
    if os.path.exists(os.path.join(OUT, f)):
        os.remove(os.path.join(OUT, f))  # ONNX appends to an existing data file
onnx.save_model(model, os.path.join(OUT, MODEL), save_as_external_data=True, all_tensors_to_one_file=True,
                location=WEIGHTS, size_threshold=0, convert_attribute=True)

saved = onnx.load(os.path.join(OUT, MODEL), load_external_data=False)
tensors = list(saved.graph.initializer) + [a.t for n in saved.graph.node for a in n.attribute if a.type == onnx.AttributeProto.TENSOR]
for t in tensors:
    assert t.data_location == TensorProto.EXTERNAL, t.name
    info = {e.key: e.value for e in t.external_data}
    size = np.dtype(helper.tensor_dtype_to_np_dtype(t.data_type)).itemsize
    assert int(info.get("offset", "0")) % size == 0, f"{t.name} at offset {info.get('offset')} is not aligned to {size} bytes"

# ONNX Runtime runs the model as built, with its tensors inline: its shape inference cannot read Reshape's shape
# from an external file ("Cannot parse data from external tensors"). The weights are the same bytes either way.
session = ort.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])
(y,) = session.run(None, {"x": x})
reference = (np.maximum(x @ w1 + b1, 0) @ w2 + b2) * scale
np.testing.assert_allclose(y, reference.reshape(4, 2), rtol=1e-5, atol=1e-6)
np.save(os.path.join(OUT, "input.npy"), x)
np.save(os.path.join(OUT, "expected.npy"), y)
print("wrote", OUT, "model", os.path.getsize(os.path.join(OUT, MODEL)), "bytes, weights", os.path.getsize(os.path.join(OUT, WEIGHTS)), "bytes")
