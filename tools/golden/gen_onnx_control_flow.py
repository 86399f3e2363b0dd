"""ONNX Scan and If models and their outputs, for kiln-onnx's ScanOpTest and IfOpTest.

Writes kiln-onnx/src/test/resources/scan/<case>/ and .../if/<case>/ in the ONNX backend-test layout (model.onnx, test_data_set_0/
input_N.pb and output_N.pb). The expected outputs are ONNX Runtime's, and each is checked here against a plain
NumPy loop written from the operator's specification, so the two independent computations agree before they are
stored.

Cases:
  axes_directions   two states of different dtypes (f32 sum, i64 counter), two scan inputs (one along axis 1, one
                    reversed), a constant initializer and a graph input read from the enclosing graph, a scan output
                    along axis 1 and a reversed one
  rnn_outer_weight  h' = tanh(h @ W + x_t) over 40 steps, W a graph input of the enclosing graph (not a constant)
  nested            a Scan whose body holds a Scan (row sums of each step's matrix) that reads a graph input two
                    scopes out

If cases:
  runtime_condition  the condition a graph input; both branches read graph inputs and an initializer of the
                     enclosing graph (two outputs, one of them i64)
  constant_condition the condition an initializer; the branches' outputs differ in shape (only the taken one is built)
  in_scan            an If inside a Scan body whose condition is computed per step (the running sum's sign)
Loop cases (kiln-onnx/src/test/resources/loop, LoopOpTest):
  for_loop           M from an initializer, no condition, a graph input read by the body, a scan output
  constant_condition_loop  M and a true condition from initializers, the body's condition a Constant, an i64 counter

Run with the python3 that has onnx and onnxruntime:
  python3 tools/golden/gen_onnx_control_flow.py
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

RESOURCES = os.path.join(os.path.dirname(__file__), "..", "..", "kiln-onnx", "src", "test", "resources")
OUT = os.path.join(RESOURCES, "scan")
F, I64 = TensorProto.FLOAT, TensorProto.INT64


def vi(name, t, shape):
    return helper.make_tensor_value_info(name, t, shape)


def save(case, graph, inputs, reference, folder=None):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = sess.run(None, inputs)
    for k, (g, r) in enumerate(zip(got, reference)):
        assert g.shape == r.shape and g.dtype == r.dtype, (case, k, g.shape, r.shape, g.dtype, r.dtype)
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-6, err_msg=f"{case} output {k}")
    d = os.path.join(folder or OUT, case)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for k, v in enumerate(graph.input):
        with open(os.path.join(d, "test_data_set_0", f"input_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(inputs[v.name], v.name).SerializeToString())
    for k, (v, g) in enumerate(zip(graph.output, got)):
        with open(os.path.join(d, "test_data_set_0", f"output_{k}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(g, v.name).SerializeToString())


def axes_directions(rng):
    t = 5
    body = helper.make_graph(
        [
            helper.make_node("Mul", ["x_t", "w"], ["xw"]),
            helper.make_node("Add", ["sum_in", "xw"], ["s1"]),
            helper.make_node("Add", ["s1", "z_t"], ["s2"]),
            helper.make_node("Add", ["s2", "y"], ["sum_out"]),
            helper.make_node("Add", ["count_in", "one"], ["count_out"]),
            helper.make_node("Mul", ["z_t", "w"], ["zw"]),
        ],
        "body",
        [vi("sum_in", F, [2, 3]), vi("count_in", I64, [1]), vi("x_t", F, [2, 3]), vi("z_t", F, [3])],
        [vi("sum_out", F, [2, 3]), vi("count_out", I64, [1]), vi("sum_seq", F, [2, 3]), vi("zw", F, [3])],
        [numpy_helper.from_array(np.array([1], np.int64), "one")],
    )
    # the body's third output is its sum again, under another name
    body.node.append(helper.make_node("Identity", ["sum_out"], ["sum_seq"]))
    w = rng.standard_normal(3).astype(np.float32)
    scan = helper.make_node("Scan", ["init", "count0", "x", "z"], ["sum_final", "count_final", "sums", "zws"], body=body, num_scan_inputs=2,
                            scan_input_axes=[1, 0], scan_input_directions=[0, 1], scan_output_axes=[1, 0], scan_output_directions=[0, 1])
    graph = helper.make_graph([scan], "axes_directions",
                              [vi("init", F, [2, 3]), vi("count0", I64, [1]), vi("x", F, [2, t, 3]), vi("z", F, [t, 3]), vi("y", F, [3])],
                              [vi("sum_final", F, [2, 3]), vi("count_final", I64, [1]), vi("sums", F, [2, t, 3]), vi("zws", F, [t, 3])],
                              [numpy_helper.from_array(w, "w")])
    inputs = {"init": rng.standard_normal((2, 3)).astype(np.float32), "count0": np.array([7], np.int64),
              "x": rng.standard_normal((2, t, 3)).astype(np.float32), "z": rng.standard_normal((t, 3)).astype(np.float32),
              "y": rng.standard_normal(3).astype(np.float32)}
    s, c = inputs["init"].copy(), inputs["count0"].copy()
    sums, zws = [], []
    for step in range(t):
        xt, zt = inputs["x"][:, step, :], inputs["z"][t - 1 - step]
        s = s + xt * w + zt + inputs["y"]
        c = c + 1
        sums.append(s)
        zws.append(zt * w)
    save("axes_directions", graph, inputs, [s, c, np.stack(sums, 1), np.stack(zws[::-1], 0)])


def rnn_outer_weight(rng):
    t, n = 40, 4
    body = helper.make_graph(
        [helper.make_node("MatMul", ["h_in", "W"], ["hw"]), helper.make_node("Add", ["hw", "x_t"], ["pre"]), helper.make_node("Tanh", ["pre"], ["h_out"]),
         helper.make_node("Identity", ["h_out"], ["y"])],
        "body", [vi("h_in", F, [1, n]), vi("x_t", F, [1, n])], [vi("h_out", F, [1, n]), vi("y", F, [1, n])])
    scan = helper.make_node("Scan", ["h0", "x"], ["h_final", "ys"], body=body, num_scan_inputs=1)
    graph = helper.make_graph([scan], "rnn_outer_weight", [vi("h0", F, [1, n]), vi("x", F, [t, 1, n]), vi("W", F, [n, n])],
                              [vi("h_final", F, [1, n]), vi("ys", F, [t, 1, n])])
    inputs = {"h0": rng.standard_normal((1, n)).astype(np.float32), "x": rng.standard_normal((t, 1, n)).astype(np.float32),
              "W": (rng.standard_normal((n, n)) * 0.5).astype(np.float32)}
    h, ys = inputs["h0"].astype(np.float64), []
    for step in range(t):
        h = np.tanh(h @ inputs["W"] + inputs["x"][step])
        ys.append(h)
    save("rnn_outer_weight", graph, inputs, [h.astype(np.float32), np.stack(ys).astype(np.float32)])


def nested(rng):
    t, r, c = 3, 4, 2
    inner = helper.make_graph(
        [helper.make_node("ReduceSum", ["row"], ["rs"], keepdims=0), helper.make_node("Add", ["acc_in", "rs"], ["a1"]),
         helper.make_node("Add", ["a1", "bias"], ["acc_out"]), helper.make_node("Identity", ["acc_out"], ["acc_seq"])],
        "inner", [vi("acc_in", F, []), vi("row", F, [c])], [vi("acc_out", F, []), vi("acc_seq", F, [])])
    outer_body = helper.make_graph(
        [helper.make_node("Scan", ["zero", "m_t"], ["total", "partials"], body=inner, num_scan_inputs=1),
         helper.make_node("Add", ["state_in", "total"], ["state_out"])],
        "outer_body", [vi("state_in", F, []), vi("m_t", F, [r, c])], [vi("state_out", F, []), vi("partials", F, [r])],
        [numpy_helper.from_array(np.array(0, np.float32), "zero")])
    scan = helper.make_node("Scan", ["s0", "m"], ["s_final", "all_partials"], body=outer_body, num_scan_inputs=1)
    graph = helper.make_graph([scan], "nested", [vi("s0", F, []), vi("m", F, [t, r, c]), vi("bias", F, [])],
                              [vi("s_final", F, []), vi("all_partials", F, [t, r])])
    inputs = {"s0": np.array(0.5, np.float32), "m": rng.standard_normal((t, r, c)).astype(np.float32), "bias": np.array(0.25, np.float32)}
    s, parts = np.float32(inputs["s0"]), []
    for step in range(t):
        acc, row_parts = np.float32(0), []
        for row in range(r):
            acc = np.float32(acc + inputs["m"][step, row].sum() + inputs["bias"])
            row_parts.append(acc)
        s = np.float32(s + acc)
        parts.append(row_parts)
    save("nested", graph, inputs, [np.array(s, np.float32), np.array(parts, np.float32)])


IF_OUT = os.path.join(RESOURCES, "if")


def runtime_condition(rng):
    then_b = helper.make_graph([helper.make_node("Mul", ["x", "w"], ["t0"]), helper.make_node("Cast", ["n"], ["t1"], to=I64)], "then", [],
                               [vi("t0", F, [2, 3]), vi("t1", I64, [3])])
    else_b = helper.make_graph([helper.make_node("Add", ["x", "w"], ["e0"]), helper.make_node("Neg", ["n"], ["e1"])], "else", [],
                               [vi("e0", F, [2, 3]), vi("e1", I64, [3])])
    node = helper.make_node("If", ["c"], ["y", "z"], then_branch=then_b, else_branch=else_b)
    graph = helper.make_graph([node], "runtime_condition", [vi("c", TensorProto.BOOL, []), vi("x", F, [2, 3]), vi("n", I64, [3])],
                              [vi("y", F, [2, 3]), vi("z", I64, [3])], [numpy_helper.from_array(np.array([1.5, -2, 0.25], np.float32), "w")])
    x = rng.standard_normal((2, 3)).astype(np.float32)
    n = np.array([4, -5, 6], np.int64)
    w = np.array([1.5, -2, 0.25], np.float32)
    for case, c in (("runtime_condition_true", True), ("runtime_condition_false", False)):
        ref = [x * w, n] if c else [x + w, -n]
        save(case, graph, {"c": np.array(c), "x": x, "n": n}, ref, IF_OUT)


def constant_condition(rng):
    then_b = helper.make_graph([helper.make_node("ReduceSum", ["x"], ["t0"], keepdims=0)], "then", [], [vi("t0", F, [])])
    else_b = helper.make_graph([helper.make_node("Relu", ["x"], ["e0"])], "else", [], [vi("e0", F, [4, 2])])
    node = helper.make_node("If", ["c"], ["y"], then_branch=then_b, else_branch=else_b)
    graph = helper.make_graph([node], "constant_condition", [vi("x", F, [4, 2])], [vi("y", F, [4, 2])],
                              [numpy_helper.from_array(np.array(False), "c")])
    x = rng.standard_normal((4, 2)).astype(np.float32)
    save("constant_condition", graph, {"x": x}, [np.maximum(x, 0)], IF_OUT)


def in_scan(rng):
    t = 6
    then_b = helper.make_graph([helper.make_node("Add", ["s1", "x_t"], ["t0"])], "then", [], [vi("t0", F, [2])])
    else_b = helper.make_graph([helper.make_node("Sub", ["s1", "x_t"], ["e0"])], "else", [], [vi("e0", F, [2])])
    body = helper.make_graph(
        [helper.make_node("ReduceSum", ["s_in"], ["total"], keepdims=0), helper.make_node("Greater", ["total", "zero"], ["positive"]),
         helper.make_node("Identity", ["s_in"], ["s1"]),
         helper.make_node("If", ["positive"], ["s_out"], then_branch=then_b, else_branch=else_b),
         helper.make_node("Identity", ["s_out"], ["y"])],
        "body", [vi("s_in", F, [2]), vi("x_t", F, [2])], [vi("s_out", F, [2]), vi("y", F, [2])],
        [numpy_helper.from_array(np.array(0, np.float32), "zero")])
    scan = helper.make_node("Scan", ["s0", "x"], ["s_final", "ys"], body=body, num_scan_inputs=1)
    graph = helper.make_graph([scan], "in_scan", [vi("s0", F, [2]), vi("x", F, [t, 2])], [vi("s_final", F, [2]), vi("ys", F, [t, 2])])
    inputs = {"s0": np.array([0.5, -0.25], np.float32), "x": rng.standard_normal((t, 2)).astype(np.float32)}
    s, ys = inputs["s0"].copy(), []
    for step in range(t):
        s = s + inputs["x"][step] if s.sum() > 0 else s - inputs["x"][step]
        ys.append(s)
    save("in_scan", graph, inputs, [s, np.stack(ys)], IF_OUT)


LOOP_OUT = os.path.join(RESOURCES, "loop")


def for_loop(rng):
    """M = 5 from an initializer, no condition input; the body reads a graph input of the enclosing graph."""
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["fi"], to=F), helper.make_node("Mul", ["fi", "w"], ["step"]),
         helper.make_node("Add", ["x_in", "step"], ["x_out"]), helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Mul", ["x_out", "two"], ["y"])],
        "body", [vi("i", I64, []), vi("cond_in", TensorProto.BOOL, []), vi("x_in", F, [3])],
        [vi("cond_out", TensorProto.BOOL, []), vi("x_out", F, [3]), vi("y", F, [3])], [numpy_helper.from_array(np.array(2, np.float32), "two")])
    node = helper.make_node("Loop", ["M", "", "x0"], ["x_final", "ys"], body=body)
    graph = helper.make_graph([node], "for_loop", [vi("x0", F, [3]), vi("w", F, [3])], [vi("x_final", F, [3]), vi("ys", F, [5, 3])],
                              [numpy_helper.from_array(np.array(5, np.int64), "M")])
    inputs = {"x0": rng.standard_normal(3).astype(np.float32), "w": rng.standard_normal(3).astype(np.float32)}
    x, ys = inputs["x0"].copy(), []
    for i in range(5):
        x = x + np.float32(i) * inputs["w"]
        ys.append(x * 2)
    save("for_loop", graph, inputs, [x, np.stack(ys)], LOOP_OUT)


def constant_condition_loop(rng):
    """M = 4 and a condition true from initializers; the body's condition a Constant true; an i64 counter carried beside a matrix."""
    body = helper.make_graph(
        [helper.make_node("Constant", [], ["cond_out"], value=numpy_helper.from_array(np.array(True), "t")),
         helper.make_node("Add", ["n_in", "one"], ["n_out"]), helper.make_node("MatMul", ["m_in", "a"], ["m_out"])],
        "body", [vi("i", I64, []), vi("cond_in", TensorProto.BOOL, []), vi("n_in", I64, [1]), vi("m_in", F, [2, 2])],
        [vi("cond_out", TensorProto.BOOL, []), vi("n_out", I64, [1]), vi("m_out", F, [2, 2])], [numpy_helper.from_array(np.array([1], np.int64), "one")])
    node = helper.make_node("Loop", ["M", "c", "n0", "m0"], ["n_final", "m_final"], body=body)
    a = (rng.standard_normal((2, 2)) * 0.5).astype(np.float32)
    graph = helper.make_graph([node], "constant_condition_loop", [vi("n0", I64, [1]), vi("m0", F, [2, 2])],
                              [vi("n_final", I64, [1]), vi("m_final", F, [2, 2])],
                              [numpy_helper.from_array(np.array(4, np.int64), "M"), numpy_helper.from_array(np.array(True), "c"), numpy_helper.from_array(a, "a")])
    inputs = {"n0": np.array([10], np.int64), "m0": rng.standard_normal((2, 2)).astype(np.float32)}
    n, mm = inputs["n0"].copy(), inputs["m0"].astype(np.float64)
    for _ in range(4):
        n = n + 1
        mm = mm @ a
    save("constant_condition_loop", graph, inputs, [n, mm.astype(np.float32)], LOOP_OUT)


if __name__ == "__main__":
    rng = np.random.default_rng(2026)
    axes_directions(rng)
    rnn_outer_weight(rng)
    nested(rng)
    runtime_condition(rng)
    constant_condition(rng)
    in_scan(rng)
    for_loop(rng)
    constant_condition_loop(rng)
    print("wrote", os.path.normpath(OUT), "and", os.path.normpath(IF_OUT))
