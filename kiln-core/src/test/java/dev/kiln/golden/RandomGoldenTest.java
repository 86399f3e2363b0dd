package dev.kiln.golden;

import dev.kiln.types.DType;
import dev.kiln.Tensor;

import java.util.Map;

/** Seeded random numbers against an independent Threefry implementation in tools/golden/gen_random.py. */
class RandomGoldenTest extends GoldenTestBase {
    @Override
    String group() { return "random"; }

    @Override
    Map<String, GoldenOp> ops() {
        return Map.ofEntries(
                Map.entry("rand", GoldenOp.one((in, a) -> a.has("dtype")
                        ? Tensor.rand(a.l("seed"), DType.parse(a.s("dtype")), a.ints("shape"))
                        : Tensor.rand(a.l("seed"), a.ints("shape")))),
                Map.entry("uniform", GoldenOp.one((in, a) -> Tensor.uniform(a.l("seed"), a.d("low"), a.d("high"), a.ints("shape")))),
                Map.entry("randn", GoldenOp.one((in, a) -> Tensor.randn(a.l("seed"), a.ints("shape")))),
                Map.entry("normal", GoldenOp.one((in, a) -> Tensor.normal(a.l("seed"), a.d("mean"), a.d("std"), a.ints("shape")))),
                Map.entry("randint", GoldenOp.one((in, a) -> a.has("dtype")
                        ? Tensor.randint(a.l("seed"), a.l("low"), a.l("high"), DType.parse(a.s("dtype")), a.ints("shape"))
                        : Tensor.randint(a.l("seed"), a.l("low"), a.l("high"), a.ints("shape")))),
                Map.entry("bernoulli", GoldenOp.one((in, a) -> Tensor.bernoulli(a.l("seed"), a.d("p"), a.ints("shape")))),
                Map.entry("bernoulli_tensor", GoldenOp.one((in, a) -> Tensor.bernoulli(a.l("seed"), in.get(0)))));
    }
}
