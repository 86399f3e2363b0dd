package dev.kiln.golden;

import dev.kiln.Tensor;

import java.util.List;

/** How a golden case's op is called through the Tensor API: inputs and args to outputs. */
@FunctionalInterface
interface GoldenOp {
    List<Tensor> apply(List<Tensor> inputs, GoldenArgs args);

    /** An op with one output. */
    static GoldenOp one(Single f) { return (in, a) -> List.of(f.apply(in, a)); }

    @FunctionalInterface
    interface Single {
        Tensor apply(List<Tensor> inputs, GoldenArgs args);
    }
}
