package dev.kiln.onnx;

import dev.kiln.Tensor;
import dev.kiln.types.DType;

import java.util.List;
import java.util.Set;

import static dev.kiln.onnx.OnnxOps.add;
import static dev.kiln.onnx.OnnxOps.one;

/**
 * ONNX's random operators ({@code RandomUniform}, {@code RandomUniformLike}, {@code RandomNormal},
 * {@code RandomNormalLike}, {@code Bernoulli}, {@code Multinomial}) and {@code Dropout} with its training-mode
 * random mask, drawn from Kiln's counter-based Threefry generator ({@link Tensor#rand(long, DType, int...)} and
 * friends): element {@code i} is a pure function of (seed, i), so a seed gives the same values on every device,
 * whatever the thread count, in every run.
 *
 * <p>Seeds. A node's {@code seed} attribute (a float in ONNX; an int for Dropout) is the generator's key: its 32 bits,
 * so distinct seeds give distinct streams. A node without one gets a default key fixed by the model: a hash of the node's first output
 * name (unique in the graph), marked so it never equals an explicit seed. Its values are therefore the same in every
 * run and every load of the model (a plan executes the same draw each time), and two unseeded nodes draw independent
 * streams. A caller who wants fresh values per run gives the model a different seed attribute, or feeds randomness as
 * an input. The key is per node, not per execution of it: a random node in a Scan or Loop body draws the same values
 * in every iteration.
 *
 * <p>Dtypes: f16, f32 and f64 outputs (ONNX's float types); uniform and normal values are computed in f64 for an f64
 * output and in f32 otherwise (f16's 11 bits are too coarse for Box-Muller's uniforms), then converted. Any other dtype is an {@link UnsupportedOnnxOpException}.
 */
final class RandomOnnxOps {
    private RandomOnnxOps() {}

    /** The float dtypes ONNX allows for random outputs. */
    private static final Set<DType> FLOATS = Set.of(DType.F16, DType.F32, DType.F64);

    static void register() {
        add("RandomUniform", 1, OnnxOps.Kind.NO_FOLD, c -> one(uniform(c, floatDtype(c, DType.F32), shapeAttr(c))), RandomOnnxOps::checkFloatDtype);
        add("RandomUniformLike", 1, OnnxOps.Kind.NO_FOLD, c -> one(uniform(c, floatDtype(c, c.in(0).dtype()), c.in(0).dims())),
                RandomOnnxOps::checkFloatDtype);
        add("RandomNormal", 1, OnnxOps.Kind.NO_FOLD, c -> one(normal(c, floatDtype(c, DType.F32), shapeAttr(c))), RandomOnnxOps::checkFloatDtype);
        add("RandomNormalLike", 1, OnnxOps.Kind.NO_FOLD, c -> one(normal(c, floatDtype(c, c.in(0).dtype()), c.in(0).dims())),
                RandomOnnxOps::checkFloatDtype);
        add("Bernoulli", 15, OnnxOps.Kind.NO_FOLD, RandomOnnxOps::bernoulli, null);
        add("Multinomial", 7, OnnxOps.Kind.NO_FOLD, RandomOnnxOps::multinomial,
                (n, opset) -> !n.attrs().has("dtype") || Set.of(6L, 7L).contains(n.attrs().i("dtype", 6)) ? null
                        : "dtype " + dtypeName(n) + " is not int32 or int64");
        // folding is harmless even in training mode: the mask is a pure function of the seed, the same on INTERP
        add("Dropout", 1, OnnxOps.Kind.NORMAL, RandomOnnxOps::dropout, null);
    }

    /**
     * The generator key of the node: its {@code seed} attribute's 32 bits, else a hash of its first output's name with
     * bit 63 set (an explicit seed never has it).
     */
    static long seed(Node n) {
        // Dropout's seed is an INT attribute, the others' a FLOAT one
        if (n.attrs().has("seed") && n.opType().equals("Dropout")) return n.attrs().i("seed", 0) & 0xFFFF_FFFFL;
        if (n.attrs().has("seed")) return Integer.toUnsignedLong(Float.floatToIntBits((float) n.attrs().f("seed", 0)));
        long h = 0x9E3779B97F4A7C15L;
        for (char ch : n.outputs().getFirst().toCharArray()) h = mix(h ^ ch);
        return h | Long.MIN_VALUE;
    }

    /** SplitMix64's finaliser: every bit of the result depends on every bit of {@code z}. */
    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /** The load-time check of a {@code dtype} attribute: absent, or f16, f32 or f64. */
    private static String checkFloatDtype(Node n, long opset) {
        if (!n.attrs().has("dtype")) return null;
        return Set.of(1L, 10L, 11L).contains(n.attrs().i("dtype", 1)) ? null
                : "dtype " + dtypeName(n) + " is not a float dtype (f16, f32, f64) that random values can be drawn in";
    }

    /** The {@code dtype} attribute as a Kiln dtype name, or its ONNX code where Kiln has no such dtype. */
    private static String dtypeName(Node n) {
        long code = n.attrs().i("dtype", 1);
        try {
            return TensorProtos.dtype((int) code, "dtype").toString();
        } catch (UnsupportedOnnxOpException e) {
            return "code " + code;
        }
    }

    /** The {@code dtype} attribute (an ONNX type code), else {@code dflt}; a float dtype Kiln draws. */
    private static DType floatDtype(OpContext c, DType dflt) {
        DType dt = c.a.has("dtype") ? TensorProtos.dtype((int) c.a.i("dtype", 1), "dtype of " + c.node.opType() + " node '" + c.node.label() + "'") : dflt;
        if (!FLOATS.contains(dt)) throw c.unsupported("dtype " + dt + " is not a float dtype (f16, f32, f64) that random values can be drawn in");
        return dt;
    }

    /** The required {@code shape} attribute of RandomUniform and RandomNormal. */
    private static int[] shapeAttr(OpContext c) {
        int[] shape = c.a.ints("shape");
        if (shape == null) throw c.bad("requires the attribute shape");
        for (int d : shape) if (d < 0) throw c.bad("shape " + java.util.Arrays.toString(shape) + " has a negative dimension " + d);
        return shape;
    }

    private static double finiteAttr(OpContext c, String name, double dflt) {
        double v = c.a.f(name, dflt);
        if (!Double.isFinite(v)) throw c.bad("attribute " + name + " must be finite, got " + v);
        return v;
    }

    /**
     * {@code low + (high - low) * u}, u uniform in [0, 1) at the dtype's precision (f32 for f16, whose 11 bits are too
     * coarse), kept below {@code high} in the output dtype (rounding could reach it); all {@code low} when they are equal.
     */
    private static Tensor uniform(OpContext c, DType dt, int[] shape) {
        double low = finiteAttr(c, "low", 0), high = finiteAttr(c, "high", 1);
        if (!(low <= high)) throw c.bad("needs low <= high, got low " + low + ", high " + high);
        DType work = dt == DType.F64 ? DType.F64 : DType.F32;
        Tensor u = c.here(Tensor.rand(seed(c.node), work, shape));
        Tensor y = u.mul(high - low).add(low).cast(dt);
        return low == high ? y : y.minimum(largestBelow(high, dt));
    }

    /** The largest value of {@code dt} below {@code high}. */
    static double largestBelow(double high, DType dt) {
        return switch (dt) {
            case F64 -> Math.nextDown(high);
            case F32 -> {
                float f = (float) high;
                yield f < high ? f : Math.nextDown(f);
            }
            case F16 -> {
                short h = Float.floatToFloat16((float) high);
                float f = Float.float16ToFloat(h);
                if (f < high) yield f;
                // one f16 step towards -infinity: the bit pattern moves down for a positive value, up for a negative one
                short below = f > 0 ? (short) (h - 1) : f == 0 ? (short) 0x8001 : (short) (h + 1);
                yield Float.float16ToFloat(below);
            }
            default -> throw new IllegalArgumentException("not a float dtype: " + dt);
        };
    }

    /** {@code mean + scale * z}, z standard normal. */
    private static Tensor normal(OpContext c, DType dt, int[] shape) {
        double mean = finiteAttr(c, "mean", 0), scale = finiteAttr(c, "scale", 1);
        Tensor z = c.here(Tensor.randn(seed(c.node), dt == DType.F64 ? DType.F64 : DType.F32, shape));
        return z.mul(scale).add(mean).cast(dt);
    }

    /** 1 with probability p for each element p of the input, else 0, as the {@code dtype} attribute (default: the input's). */
    private static List<Tensor> bernoulli(OpContext c) {
        Tensor p = c.in(0);
        if (!FLOATS.contains(p.dtype())) throw c.bad("input 0 (probabilities) must be f16, f32 or f64, got " + p.dtype());
        DType out = c.a.has("dtype") ? TensorProtos.dtype((int) c.a.i("dtype", 1), "dtype of Bernoulli node '" + c.node.label() + "'") : p.dtype();
        return one(Tensor.bernoulli(seed(c.node), p).cast(out));
    }

    /**
     * {@code sample_size} class indices per batch row, drawn from the distribution whose unnormalised log-probabilities
     * are the row: the inverse of the row's cumulative softmax at a uniform u (the number of classes whose cumulative
     * probability lies below u), clamped to the last class against rounding.
     */
    private static List<Tensor> multinomial(OpContext c) {
        Tensor x = c.ranked(0, 2, 2);
        if (!FLOATS.contains(x.dtype())) throw c.bad("input 0 (log-probabilities) must be f16, f32 or f64, got " + x.dtype());
        long sampleSize = c.a.i("sample_size", 1);
        if (sampleSize < 1 || sampleSize > Integer.MAX_VALUE) throw c.bad("sample_size must be at least 1, got " + sampleSize);
        DType out = TensorProtos.dtype((int) c.a.i("dtype", 6), "dtype of Multinomial node '" + c.node.label() + "'");
        if (out != DType.I32 && out != DType.I64) throw c.unsupported("dtype " + out + " is not int32 or int64");
        int batch = x.dim(0), classes = x.dim(1);
        if (classes == 0) throw c.bad("input 0 has no classes to draw from (shape " + x.shape() + ")");
        DType work = x.dtype() == DType.F64 ? DType.F64 : DType.F32;
        Tensor cdf = x.cast(work).softmax(1).cumsum(1).reshape(batch, 1, classes);
        Tensor u = c.here(Tensor.rand(seed(c.node), work, batch, (int) sampleSize, 1));
        Tensor index = cdf.lt(u).cast(DType.I64).sum(2).minimum((long) classes - 1);
        return one(index.cast(out));
    }

    /**
     * Dropout. Inference (no {@code training_mode}, or false; or {@code is_test} before opset 7): the output is the
     * input and the mask all true. Training: the mask keeps an element where a uniform draw is at least {@code ratio}
     * (probability {@code 1 - ratio}), and the output is {@code x * mask / (1 - ratio)}. The ratio stays a graph value;
     * a constant one must lie in [0, 1).
     */
    private static List<Tensor> dropout(OpContext c) {
        Tensor x = c.in(0);
        boolean training = c.opset >= 12 ? c.has(2) && c.scalar(2) != 0 : c.opset < 7 && !c.a.b("is_test", false);
        DType maskType = c.opset >= 10 ? DType.BOOL : x.dtype();
        Tensor ratio;
        if (c.opset >= 12 && c.has(1)) {
            ratio = c.in(1);
            if (ratio.numel() != 1 || !ratio.dtype().isFloat()) throw c.bad("ratio (input 1) must be one float value, got " + ratio.dtype() + " " + ratio.shape());
            if (c.isConstant(1)) checkRatio(c, c.scalar(1));
            ratio = ratio.reshape().cast(x.dtype());
        } else {
            double r = c.opset >= 12 ? 0.5 : c.a.f("ratio", 0.5);
            checkRatio(c, r);
            ratio = c.scalarOf(r, x.dtype());
        }
        if (!training) {
            Tensor mask = x.onesLike().cast(maskType);
            return c.wantsOutput(1) ? List.of(x, mask) : List.of(x);
        }
        if (!x.dtype().isFloat()) throw c.bad("training-mode dropout needs float data, got " + x.dtype());
        DType work = x.dtype() == DType.F64 ? DType.F64 : DType.F32;
        Tensor keep = c.here(Tensor.rand(seed(c.node), work, x.dims())).ge(ratio.cast(work));
        Tensor y = Tensor.where(keep, x.div(ratio.rsub(1.0)), c.scalarOf(0, x.dtype()));
        return c.wantsOutput(1) ? List.of(y, keep.cast(maskType)) : List.of(y);
    }

    private static void checkRatio(OpContext c, double ratio) {
        if (!(ratio >= 0 && ratio < 1)) throw c.bad("ratio must lie in [0, 1), got " + ratio);
    }
}
