package dev.kiln.testing;

import dev.kiln.types.DType;
import dev.kiln.Tensor;
import dev.kiln.ir.Op;
import dev.kiln.ir.UOp;
import dev.kiln.runtime.Buffer;
import dev.kiln.ir.Elements;
import org.junit.jupiter.params.provider.Arguments;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * A catalog of tensor graphs for testing the compiler pipeline (scheduling, lowering, backends) against
 * the INTERP device: fusion shapes (broadcasts, movement ops, padding, fused reductions) and graphs that
 * exercise every dtype and elementwise op at its edges (wraparound, unsigned division, shifts by the
 * width, casts of NaN and infinities, division by zero, f16/bf16 rounding, THREEFRY, mul then add).
 */
public final class TestGraphs {
    private TestGraphs() {}

    /** (name, {@code Supplier<UOp>}): each supplier builds a fresh, unrealised graph. */
    public static Stream<Arguments> graphs() {
        Map<String, Supplier<UOp>> g = new LinkedHashMap<>();
        fusion(g);
        integers(g);
        floats(g);
        casts(g);
        reductions(g);
        raw(g);
        return g.entrySet().stream().map(e -> Arguments.of(e.getKey(), e.getValue()));
    }

    /** Deterministic, irregular f32 test data of a shape (seed varies the values). */
    public static Tensor data(int seed, int... shape) {
        int n = 1;
        for (int d : shape) n *= d;
        return Tensor.arange(n).cast(DType.F32).mul(0.7 + 0.13 * seed).add(seed).sin().mul(2).reshape(shape).realize();
    }

    /**
     * A join's value from its pieces' own buffers: in a plan the pieces' kernels write into the join's bytes,
     * a harness that gives every kernel a buffer of its own copies them side by side here.
     */
    public static Buffer join(dev.kiln.schedule.ScheduleItem.Join j, Map<UOp, Buffer> buffers) {
        UOp o = j.output();
        Buffer out = Buffer.allocateHeap("TEST", o.dtype(), o.shape().numel());
        for (int i = 0; i < j.inputs().size(); i++) {
            MemorySegment piece = buffers.get(j.inputs().get(i)).segment();
            long bytes = j.inputs().get(i).dtype().byteSize(j.inputs().get(i).shape().numel());
            MemorySegment.copy(piece, 0, out.segment(), j.offsets().get(i), bytes);
        }
        return out;
    }

    /** The INTERP device's value of a graph. */
    public static Buffer interpret(UOp root) {
        return dev.kiln.runtime.DeviceRegistry.get("INTERP").realize(root, Map.of()); // the oracle, not the default device
    }

    /**
     * Asserts that two buffers of {@code count} elements of {@code dtype} hold the same bits, except that
     * any NaN equals any NaN (NaN payloads are not part of the semantics).
     */
    public static void assertSameBits(String what, DType dtype, long count, MemorySegment expected, MemorySegment actual) {
        for (long i = 0; i < count; i++) {
            boolean same;
            if (dtype.isFloat()) {
                double e = Elements.getDouble(expected, dtype, i), a = Elements.getDouble(actual, dtype, i);
                same = Double.isNaN(e) ? Double.isNaN(a) : Double.doubleToRawLongBits(e) == Double.doubleToRawLongBits(a);
                if (!same) throw new AssertionError(what + ": element " + i + " of " + count + " (" + dtype + ") expected " + e + " but was " + a);
            } else {
                long e = Elements.getLong(expected, dtype, i), a = Elements.getLong(actual, dtype, i);
                if (e != a) throw new AssertionError(what + ": element " + i + " of " + count + " (" + dtype + ") expected " + e + " but was " + a);
            }
        }
    }

    private static Supplier<UOp> t(Supplier<Tensor> graph) { return () -> graph.get().uop(); }

    // ---------------------------------------------------------------- fusion shapes

    private static void fusion(Map<String, Supplier<UOp>> g) {
        Tensor x = data(1, 3, 4), y = data(2, 2, 4, 5), v = data(3, 3, 4);
        Tensor img = data(4, 2, 2, 6, 6), w = data(5, 5, 2, 3, 3);
        Tensor ints = Tensor.arange(12).reshape(3, 4).realize();
        g.put("elementwise chain", t(() -> x.add(1).mul(x).exp().relu()));
        g.put("broadcast add", t(() -> x.add(v.sum(0))));
        g.put("permute and flip", t(() -> x.mT().flip(0).add(1)));
        g.put("slice with step", t(() -> y.slice(1, 0, 5, 2).mul(2)));
        g.put("pad constant of exp (f(0) != 0)", t(() -> x.exp().pad(new int[][] {{1, 0}, {2, 1}})));
        g.put("pad reflect", t(() -> x.pad(new int[][] {{1, 1}, {2, 2}}, Tensor.PadMode.REFLECT, 0)));
        g.put("reshape across axes", t(() -> y.reshape(5, 8).sum(1).reshape(5, 1).expand(5, 3)));
        g.put("two reductions one kernel", t(() -> ints.cast(DType.F32).sum(0).add(ints.cast(DType.F32).sum(1).sum()).relu()));
        g.put("softmax", t(() -> y.softmax(-1)));
        g.put("layernorm", t(() -> y.layerNorm(new int[] {5}, null, null, 1e-5)));
        g.put("matmul bias relu", t(() -> x.matmul(y.slice(0, 0, 1, 1).reshape(4, 5)).add(1).relu()));
        g.put("attention", t(() -> Tensor.scaledDotProductAttention(y, y, y, null, true, null)));
        g.put("argmax and cumsum", t(() -> y.argmax(1).cast(DType.F32).add(y.cumsum(1).sum(1))));
        g.put("conv2d", t(() -> img.conv2d(w, null, new int[] {1, 1}, new int[] {1, 1}, new int[] {1, 1}, 1)));
        g.put("max pool", t(() -> img.maxPool2d(new int[] {2, 2}, new int[] {2, 2}, new int[] {0, 0}, new int[] {1, 1}, false)));
        g.put("integer math", t(() -> ints.mod(5).mul(ints.floorDiv(3)).add(ints.shl(2)).bitwiseXor(7)));
        g.put("sort", t(() -> v.sort(1, true).values()));
        g.put("zero-size", t(() -> Tensor.zeros(0, 3).add(1)));
        g.put("sum over empty axis", t(() -> Tensor.zeros(3, 0).sum(1)));
    }

    // ---------------------------------------------------------------- integers and bools

    private static final DType[] INTS = {DType.I8, DType.U8, DType.I16, DType.U16, DType.I32, DType.U32, DType.I64, DType.U64};

    /** Edge values of an integer dtype (min, max, around 0, around the sign bit) then irregular ones. */
    static long[] edges(DType dt, int n, int seed) {
        long min = dt.isUnsigned() ? 0 : dt.minInt();
        long max = dt == DType.U64 ? -1L : dt.isUnsigned() ? (1L << dt.bits()) - 1 : dt.maxInt();
        long half = dt.bits() == 64 ? Long.MIN_VALUE : 1L << (dt.bits() - 1);
        long[] e = {min, min + 1, -1, 0, 1, 2, max - 1, max, half, half - 1, 7, -7, 3, -3, 0};
        long[] out = new long[n];
        long r = 0x9E3779B97F4A7C15L * (seed + 1);
        for (int i = 0; i < n; i++) {
            r = r * 6364136223846793005L + 1442695040888963407L;
            out[i] = i < e.length ? e[(i + seed * 4) % e.length] : (i % 3 == 0 ? (r >> 60) : r >> (64 - dt.bits()));
        }
        return out;
    }

    /** Shift amounts around the width, negative and huge. */
    static long[] shifts(DType dt, int n) {
        int w = dt.bits();
        long[] s = {0, 1, w - 1, w, w + 1, -1, 3, 2 * w, 63, 64, 65, w / 2, -w, 5, Long.MIN_VALUE, 7};
        long[] out = new long[n];
        for (int i = 0; i < n; i++) out[i] = s[i % s.length];
        return out;
    }

    private static void integers(Map<String, Supplier<UOp>> g) {
        int n = 24;
        for (DType dt : INTS) {
            long[] divisors = edges(dt, n, 1);
            divisors[0] = -1; // min / -1 overflows
            divisors[2] = 0;
            Tensor x = Tensor.of(dt, edges(dt, n, 0), n), y = Tensor.of(dt, divisors, n), s = Tensor.of(dt, shifts(dt, n), n);
            g.put(dt + " arithmetic, division by zero, shifts", t(() -> Tensor.stack(0,
                    x.add(y), x.mul(y), x.sub(y), x.neg(), x.abs(), x.floorDiv(y), x.mod(y), x.truncDiv(y), x.fmod(y),
                    x.maximum(y), x.minimum(y), x.lt(y).cast(dt), x.eq(y).cast(dt), x.ne(y).cast(dt), x.le(y).cast(dt),
                    x.bitwiseAnd(y), x.bitwiseOr(y), x.bitwiseXor(y), x.bitwiseNot(), x.shl(s), x.shr(s),
                    x.floorDiv(3), x.mod(3), x.floorDiv(-3), x.mod(-3), x.mul(x).add(7),
                    // comparisons see whether an intermediate value was wrapped (a later store would wrap it anyway)
                    x.floorDiv(y).lt(0).cast(dt), x.truncDiv(y).lt(0).cast(dt), x.neg().lt(x).cast(dt), x.add(y).lt(x).cast(dt),
                    x.mul(y).lt(x).cast(dt), x.shl(s).lt(x).cast(dt), x.sub(y).lt(x).cast(dt), x.bitwiseNot().lt(x).cast(dt))));
        }
        Tensor a = Tensor.of(DType.I8, edges(DType.I8, 16, 2), 16), b = Tensor.of(DType.U8, edges(DType.U8, 16, 3), 16);
        g.put("i8 with u8 promotes to i16", t(() -> a.add(b).mul(b).sub(a.shl(3))));
        boolean[] p = {true, true, false, false, true, false, true, false}, q = {true, false, true, false, false, false, true, true};
        Tensor bp = Tensor.of(p, 8), bq = Tensor.of(q, 8);
        g.put("bool logic and arithmetic", t(() -> Tensor.stack(0,
                bp.logicalAnd(bq), bp.logicalOr(bq), bp.logicalXor(bq), bp.logicalNot(), bp.add(bq), bp.mul(bq),
                bp.maximum(bq), bp.minimum(bq), bp.lt(bq), bp.eq(bq), bp.ne(bq), bp.bitwiseNot(),
                bp.floorDiv(bq), bp.mod(bq), bp.shl(bq), bp.shr(bq), Tensor.where(bp, bq, bp.logicalNot()))));
        g.put("bool to numbers", t(() -> Tensor.stack(0, bp.cast(DType.I8), bp.cast(DType.U64).cast(DType.I8),
                bp.cast(DType.F16).cast(DType.I8), bp.cast(DType.F64).cast(DType.I8), bp.bitcast(DType.U8).cast(DType.I8))));
    }

    // ---------------------------------------------------------------- floats

    private static final double[] SPECIAL = {Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, 0.0, -0.0, 1, -1, 0.5,
            1e-3, 3.7, -2.5, 65504, 1e-40, 1e38, 7, -7, 2, 1.5, -0.75, 1e-8, 100.25, -3e5, 0.1, 4};

    private static double[] rotated(double[] v, int k) {
        double[] out = new double[v.length];
        for (int i = 0; i < v.length; i++) out[i] = v[(i + k) % v.length];
        return out;
    }

    private static void floats(Map<String, Supplier<UOp>> g) {
        int n = SPECIAL.length;
        for (DType dt : new DType[] {DType.F16, DType.BF16, DType.F32, DType.F64}) {
            Tensor x = Tensor.of(dt, SPECIAL, n), y = Tensor.of(dt, rotated(SPECIAL, 5), n);
            g.put(dt + " arithmetic and special values", t(() -> Tensor.stack(0,
                    x.add(y), x.sub(y), x.mul(y), x.div(y), x.floorDiv(y), x.mod(y), x.fmod(y), x.maximum(y), x.minimum(y),
                    x.lt(y).cast(dt), x.eq(y).cast(dt), x.ne(y).cast(dt), x.sqrt(), x.exp2(), x.log2(), x.sin(), x.reciprocal(),
                    x.trunc(), x.neg(), Tensor.where(x.lt(y), x, y), x.mul(0.1).add(y), x.floorDiv(-0.75), x.mod(2.5))));
        }
        double[] powers = {1, 2, 4, 0.5, 0.25, 1024, 1.0 / 1024, 3, 10, 1e-30};
        g.put("log2 of powers of two", t(() -> Tensor.of(DType.F32, powers, powers.length).log2()
                .add(Tensor.of(DType.F64, powers, powers.length).log2().cast(DType.F32))));
    }

    // ---------------------------------------------------------------- casts and bitcasts

    private static final double[] TO_INT = {Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, -0.0, 0.5, -0.5, -1.5, 1.5,
            127.9, 128.5, -128.7, 255.9, 256.2, 65535.9, -32769.4, 2.1e9, 3e9, 4.3e9, 9.3e18, 1.8e19, 2e19, -9.3e18, 1e30, -1e30};

    private static void casts(Map<String, Supplier<UOp>> g) {
        int n = TO_INT.length;
        for (DType from : new DType[] {DType.F16, DType.BF16, DType.F32, DType.F64}) {
            Tensor x = Tensor.of(from, TO_INT, n);
            g.put(from + " to every integer and bool", t(() -> {
                List<Tensor> parts = new ArrayList<>();
                for (DType to : INTS) parts.add(x.cast(to).cast(DType.I64));
                parts.add(x.cast(DType.BOOL).cast(DType.I64));
                return Tensor.stack(0, parts.toArray(Tensor[]::new));
            }));
        }
        long[] big = {0, 1, -1, (1L << 24) + 1, (1L << 53) + 1, Long.MAX_VALUE, Long.MIN_VALUE, 123456789012345L, (1L << 54) + 3,
                -(1L << 40) - 12345, 65519, 65520, 1L << 62, (1L << 63) + 1, -2, 0x7FFFFFFF, (1L << 53) + (1L << 29) + 1, 3,
                // long -> double -> float lands on a bf16 tie that long -> float does not
                (1L << 60) + (1L << 52) + (1L << 36) + 1, -((1L << 60) + (1L << 52) + (1L << 36) + 1),
                // i32 -> float -> bf16 rounds twice (to a tie, then to even) where i32 -> bf16 rounds up
                (1L << 24) + (1L << 16) + 1};
        for (DType from : INTS) {
            Tensor x = Tensor.of(from, big, big.length);
            g.put(from + " to every float", t(() -> Tensor.stack(0, x.cast(DType.F16).cast(DType.F64), x.cast(DType.BF16).cast(DType.F64),
                    x.cast(DType.F32).cast(DType.F64), x.cast(DType.F64))));
            g.put(from + " to every integer", t(() -> {
                List<Tensor> parts = new ArrayList<>();
                for (DType to : INTS) parts.add(x.cast(to).cast(DType.I64));
                parts.add(x.cast(DType.BOOL).cast(DType.I64));
                return Tensor.stack(0, parts.toArray(Tensor[]::new));
            }));
        }
        // f64 values one f32 ulp apart from f16 and bf16 ties, so rounding through f32 first matters
        double[] ties = {1 + 0x1p-11 + 0x1p-40, 1 + 0x1p-11, 1 + 0x1p-8 + 0x1p-30, 1 + 0x1p-8, 65520, 65519.99, 1e-8, 6e-8, 3e38, 4e38,
                Double.NaN, -0.0, Double.NEGATIVE_INFINITY, 1 + 3 * 0x1p-11, 1e300, -1e-300};
        Tensor d = Tensor.of(DType.F64, ties, ties.length);
        g.put("f64 to narrower floats", t(() -> Tensor.stack(0, d.cast(DType.F32).cast(DType.F64), d.cast(DType.F16).cast(DType.F64),
                d.cast(DType.BF16).cast(DType.F64), d.cast(DType.F32).cast(DType.F16).cast(DType.F64),
                d.cast(DType.F16).cast(DType.BF16).cast(DType.F64), d.cast(DType.BF16).cast(DType.F16).cast(DType.F64))));
        Tensor f = Tensor.of(DType.F32, SPECIAL, SPECIAL.length);
        long[] words = {0, 1, -1, 0x3F800000, 0x7F800000, 0xFF800000L, 0x00000001, 0x3C00, 0x7BFF, 0x8000, 0x4049_0FDB, 0x12345678,
                Long.MIN_VALUE, 0x3FF0000000000000L, 0x7FF0000000000000L, 0xC000000000000000L};
        g.put("bitcasts", t(() -> {
            List<Tensor> parts = new ArrayList<>();
            parts.add(f.bitcast(DType.I32).cast(DType.I64));
            parts.add(f.bitcast(DType.U32).cast(DType.I64));
            parts.add(f.cast(DType.F16).bitcast(DType.I16).cast(DType.I64));
            parts.add(f.cast(DType.F16).bitcast(DType.U16).cast(DType.I64));
            parts.add(f.cast(DType.BF16).bitcast(DType.I16).cast(DType.I64));
            parts.add(f.cast(DType.BF16).bitcast(DType.U16).cast(DType.I64));
            parts.add(f.cast(DType.F64).bitcast(DType.I64));
            parts.add(f.cast(DType.F64).bitcast(DType.U64).cast(DType.I64));
            parts.add(f.cast(DType.F16).bitcast(DType.BF16).bitcast(DType.I16).cast(DType.I64));
            parts.add(f.cast(DType.BF16).bitcast(DType.F16).cast(DType.F32).bitcast(DType.I32).cast(DType.I64));
            parts.add(f.cast(DType.I8).bitcast(DType.U8).cast(DType.I64));
            parts.add(f.cast(DType.U8).bitcast(DType.I8).cast(DType.I64));
            return Tensor.stack(0, parts.toArray(Tensor[]::new));
        }));
        // ints to floats: only bit patterns that are not signalling NaNs, whose payload a double round trip may change
        g.put("bitcasts to floats", t(() -> {
            Tensor w = Tensor.of(DType.I64, words, words.length);
            return Tensor.stack(0, w.cast(DType.I32).bitcast(DType.F32).cast(DType.F64), w.cast(DType.U32).bitcast(DType.F32).cast(DType.F64),
                    w.cast(DType.I16).bitcast(DType.F16).cast(DType.F64), w.cast(DType.U16).bitcast(DType.BF16).cast(DType.F64),
                    w.bitcast(DType.F64), w.bitcast(DType.U64).bitcast(DType.F64));
        }));
    }

    // ---------------------------------------------------------------- reductions per dtype

    private static void reductions(Map<String, Supplier<UOp>> g) {
        for (DType dt : new DType[] {DType.I8, DType.U16, DType.I32, DType.U32, DType.I64, DType.U64}) {
            Tensor x = Tensor.of(dt, edges(dt, 24, 4), 4, 6);
            g.put(dt + " reductions", t(() -> Tensor.stack(0, x.max(1), x.min(1), x.sum(1).cast(dt), x.prod(1).cast(dt))));
        }
        double[] fv = rotated(SPECIAL, 3);
        for (DType dt : new DType[] {DType.F16, DType.BF16, DType.F32, DType.F64}) {
            Tensor x = Tensor.of(dt, fv, 4, 6);
            Tensor finite = x.maskedFill(x.isnan(), 0.0);
            g.put(dt + " reductions with NaN and infinities", t(() -> Tensor.stack(0, x.max(1), x.min(1), finite.sum(1).cast(dt),
                    finite.prod(1).cast(dt), finite.mul(0.01).sum(0).sum().reshape(1).expand(4))));
        }
        boolean[] bits = {true, false, true, true, false, false, true, true, true, false, false, false};
        Tensor b = Tensor.of(bits, 3, 4);
        g.put("bool reductions", t(() -> Tensor.stack(0, b.any(1), b.all(1), b.any(0).slice(0, 0, 3, 1), b.all(0).slice(0, 1, 4, 1))));
    }

    // ---------------------------------------------------------------- graphs only the IR can build

    private static void raw(Map<String, Supplier<UOp>> g) {
        long[] counters = {0, 1, 2, -1, 0x1234_5678_9ABC_DEF0L, Long.MIN_VALUE, 42, 7};
        long[] keys = {0, 0, 1, -1, 0xDEAD_BEEF_0000_0001L, 5, 1L << 32, -7};
        g.put("threefry", () -> {
            UOp c = Tensor.of(DType.U64, counters, 8).uop(), k = Tensor.of(DType.U64, keys, 8).uop();
            return UOp.of(Op.THREEFRY, DType.U64, null, c, k);
        });
        double[] fa = {1 + 0x1p-12, 3.0, 0.1, -2.5, 1e30, 65504, 0.3333, Double.NaN}, fb = {1 - 0x1p-12, 7.0, 0.2, 4, 1e10, 2, 3, 1};
        double[] fc = {-1, 0.5, 0.3, 10, -1e40, -65504, -0.9999, 0};
        for (DType dt : new DType[] {DType.F16, DType.BF16, DType.F32, DType.F64}) {
            g.put(dt + " mul then add rounds twice", () -> Tensor.of(dt, fa, 8).mul(Tensor.of(dt, fb, 8)).add(Tensor.of(dt, fc, 8)).uop());
        }
        for (DType dt : new DType[] {DType.I8, DType.U32, DType.U64}) {
            g.put(dt + " mul then add wraps", () -> Tensor.of(dt, edges(dt, 12, 5), 12).mul(Tensor.of(dt, edges(dt, 12, 6), 12))
                    .add(Tensor.of(dt, edges(dt, 12, 7), 12)).uop());
        }
    }
}
