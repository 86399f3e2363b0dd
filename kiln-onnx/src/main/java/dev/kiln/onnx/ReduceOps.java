package dev.kiln.onnx;

import dev.kiln.types.DType;
import dev.kiln.Tensor;

import java.util.Arrays;
import java.util.List;
import java.util.function.Function;

import static dev.kiln.onnx.OnnxOps.add;
import static dev.kiln.onnx.OnnxOps.one;

/** Reductions, arg-extremes, softmax family and the loss operators. */
final class ReduceOps {
    private ReduceOps() {}

    /** A reduction over the given axes (sorted, distinct, non-empty) keeping them as size 1. */
    private interface Reducer {
        Tensor apply(Tensor x, int[] axes);
    }

    static void register() {
        reduce("ReduceSum", 13, (x, ax) -> x.sum(ax, true));
        reduce("ReduceMean", 18, (x, ax) -> x.mean(ax, true));
        reduce("ReduceMax", 18, (x, ax) -> x.max(ax, true));
        reduce("ReduceMin", 18, (x, ax) -> x.min(ax, true));
        reduce("ReduceProd", 18, (x, ax) -> x.prod(ax, true));
        reduce("ReduceL1", 18, (x, ax) -> x.abs().sum(ax, true));
        reduce("ReduceL2", 18, (x, ax) -> flt(x).square().sum(ax, true).sqrt());
        reduce("ReduceSumSquare", 18, (x, ax) -> x.square().sum(ax, true));
        reduce("ReduceLogSum", 18, (x, ax) -> flt(x).sum(ax, true).log());
        reduce("ReduceLogSumExp", 18, (x, ax) -> flt(x).logsumexp(ax, true));

        add("ArgMax", 1, c -> argExtreme(c, true));
        add("ArgMin", 1, c -> argExtreme(c, false));

        softmaxLike("Softmax", x -> x.softmax(-1));
        softmaxLike("LogSoftmax", x -> x.logSoftmax(-1));
        softmaxLike("Hardmax", x -> x.hardmax(-1));

        add("NegativeLogLikelihoodLoss", 12, c -> one(c.in(0).nllLoss(c.in(1), c.opt(2), c.a.s("reduction", "mean"), ignoreIndex(c))),
                ReduceOps::checkLossReduction);
        add("SoftmaxCrossEntropyLoss", 12, c -> {
            Tensor loss = c.in(0).softmaxCrossEntropyLoss(c.in(1), c.opt(2), c.a.s("reduction", "mean"), ignoreIndex(c));
            return c.wantsOutput(1) ? List.of(loss, c.in(0).logSoftmax(1)) : List.of(loss);
        }, ReduceOps::checkLossReduction);
    }

    /** {@code x} as floats (f32 for integer inputs), for reductions defined through logarithms and roots. */
    static Tensor flt(Tensor x) { return x.dtype().isFloat() ? x : x.cast(DType.F32); }

    private static String checkLossReduction(Node n, long opset) {
        String r = n.attrs().s("reduction", "mean");
        return r.equals("mean") || r.equals("sum") || r.equals("none") ? null : "reduction '" + r + "' is not supported";
    }

    /**
     * A reduction operator. Its axes are an attribute before {@code axesInputSince} and an optional input from
     * then on (with {@code noop_with_empty_axes}); no axes means all. The result keeps the input's dtype.
     */
    private static void reduce(String op, int axesInputSince, Reducer r) {
        add(op, 1, c -> {
            Tensor x = c.in(0);
            long[] axes;
            boolean noop = false;
            if (c.opset >= axesInputSince) {
                axes = c.has(1) ? c.longs(1) : null;
                noop = c.a.b("noop_with_empty_axes", false);
            } else axes = c.a.longs("axes");
            boolean keep = c.a.b("keepdims", true);
            if (axes == null || axes.length == 0) {
                if (noop) return one(x);
                axes = new long[x.ndim()];
                for (int k = 0; k < axes.length; k++) axes[k] = k;
            }
            int[] ax = Arrays.stream(axes).mapToInt(a -> c.axis(a, x.ndim(), "axis")).distinct().sorted().toArray();
            Tensor y = ax.length == 0 ? x : r.apply(x, ax);
            if (!keep) {
                int[] d = y.dims();
                int[] out = new int[d.length - ax.length];
                for (int k = 0, j = 0; k < d.length; k++) if (Arrays.binarySearch(ax, k) < 0) out[j++] = d[k];
                y = y.reshape(out);
            }
            return one(y.cast(x.dtype()));
        });
    }

    private static List<Tensor> argExtreme(OpContext c, boolean max) {
        Tensor x = c.in(0);
        int axis = c.a.int32("axis", 0);
        boolean keep = c.a.b("keepdims", true), last = c.opset >= 12 && c.a.b("select_last_index", false);
        return one(max ? x.argmax(axis, keep, last) : x.argmin(axis, keep, last));
    }

    /**
     * Softmax, LogSoftmax and Hardmax: before opset 13 the input is seen as 2-D, split at {@code axis}
     * (default 1), and normalised over the second part; from 13 over the one {@code axis} (default -1).
     */
    private static void softmaxLike(String op, Function<Tensor, Tensor> lastAxis) {
        add(op, 1, c -> {
            Tensor x = c.in(0);
            int r = x.ndim();
            if (c.opset >= 13) {
                int axis = c.axis(c.a.i("axis", -1), r, "axis");
                return one(lastAxis.apply(x.transpose(axis, -1)).transpose(axis, -1));
            }
            long a = c.a.i("axis", 1);
            int axis = (int) (a < 0 ? a + r : a);
            int outer = 1, inner = 1;
            for (int k = 0; k < r; k++) {
                if (k < axis) outer *= x.dim(k);
                else inner *= x.dim(k);
            }
            return one(lastAxis.apply(x.reshape(outer, inner)).reshape(x.dims()));
        });
    }

    private static Integer ignoreIndex(OpContext c) { return c.a.has("ignore_index") ? c.a.int32("ignore_index", 0) : null; }
}
