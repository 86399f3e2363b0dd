package dev.kiln.golden;

import dev.kiln.Tensor;

import java.util.Map;
import java.util.function.BiFunction;
import java.util.function.Function;

import static dev.kiln.golden.CoreGolden.axes;
import static dev.kiln.golden.CoreGolden.inputs;
import static java.util.Map.entry;

/** Reductions, arg-reductions and cumulative ops (tools/golden/gen_reductions.py). */
class ReductionsGoldenTest extends GoldenTestBase {
    @Override
    String group() { return "reductions"; }

    /** A reduction over "axes" with "keepdim", or its no-argument all-axes form when the case gives no axes. */
    private static GoldenOp reduction(Function<Tensor, Tensor> all, ReduceCall f) {
        return GoldenOp.one((in, a) -> {
            Tensor x = inputs(in, a).get(0);
            return a.has("axes") ? f.apply(x, axes(a), a.b("keepdim", false)) : all.apply(x);
        });
    }

    @FunctionalInterface
    private interface ReduceCall {
        Tensor apply(Tensor x, int[] axes, boolean keepdim);
    }

    @FunctionalInterface
    private interface SpreadCall {
        Tensor apply(Tensor x, int[] axes, boolean keepdim, double correction);
    }

    /** var / std: the (axes, keepdim, correction) form, or the int... form (correction 1) when the case gives no correction. */
    private static GoldenOp spread(SpreadCall f, BiFunction<Tensor, int[], Tensor> plain) {
        return GoldenOp.one((in, a) -> {
            Tensor x = inputs(in, a).get(0);
            return a.has("correction") ? f.apply(x, axes(a), a.b("keepdim", false), a.d("correction")) : plain.apply(x, axes(a));
        });
    }

    /** argmax / argmin along "axis", or over the flattened tensor without one. */
    private static GoldenOp arg(Function<Tensor, Tensor> flat, ReduceCall f) {
        return GoldenOp.one((in, a) -> {
            Tensor x = inputs(in, a).get(0);
            return a.has("axis") ? f.apply(x, new int[] {a.i("axis")}, a.b("keepdim", false)) : flat.apply(x);
        });
    }

    @Override
    Map<String, GoldenOp> ops() {
        return Map.ofEntries(
                entry("sum", reduction(Tensor::sum, Tensor::sum)),
                entry("prod", reduction(Tensor::prod, Tensor::prod)),
                entry("max", reduction(Tensor::max, Tensor::max)),
                entry("min", reduction(Tensor::min, Tensor::min)),
                entry("mean", reduction(Tensor::mean, Tensor::mean)),
                entry("var", spread(Tensor::var, Tensor::var)),
                entry("std", spread(Tensor::std, Tensor::std)),
                entry("any", reduction(Tensor::any, Tensor::any)),
                entry("all", reduction(Tensor::all, Tensor::all)),
                entry("logsumexp", reduction(Tensor::logsumexp, Tensor::logsumexp)),
                entry("argmax", arg(Tensor::argmax, (x, ax, k) -> x.argmax(ax[0], k))),
                entry("argmin", arg(Tensor::argmin, (x, ax, k) -> x.argmin(ax[0], k))),
                entry("cumsum", GoldenOp.one((in, a) -> inputs(in, a).get(0).cumsum(a.i("axis")))),
                entry("cumprod", GoldenOp.one((in, a) -> inputs(in, a).get(0).cumprod(a.i("axis")))));
    }
}
