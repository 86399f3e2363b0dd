package dev.kiln.golden;

import dev.kiln.Tensor;

import java.util.List;
import java.util.Map;

import static dev.kiln.golden.CoreGolden.inputs;
import static java.util.Map.entry;

/** Matrix products, Einstein summation and linear layers (tools/golden/gen_linalg.py). */
class LinalgGoldenTest extends GoldenTestBase {
    @Override
    String group() { return "linalg"; }

    @Override
    Map<String, GoldenOp> ops() {
        return Map.ofEntries(
                entry("matmul", GoldenOp.one((in, a) -> {
                    List<Tensor> x = inputs(in, a);
                    return x.get(0).matmul(x.get(1));
                })),
                entry("einsum", GoldenOp.one((in, a) -> Tensor.einsum(a.s("equation"), inputs(in, a).toArray(Tensor[]::new)))),
                entry("linear", GoldenOp.one((in, a) -> {
                    List<Tensor> x = inputs(in, a);
                    return x.get(0).linear(x.get(1), x.size() > 2 ? x.get(2) : null);
                })));
    }
}
