package dev.kiln;

import dev.kiln.types.Shape;
import dev.kiln.types.DType;
import dev.kiln.ir.Op;
import dev.kiln.ir.UOp;
import dev.kiln.runtime.Device;

import java.util.Arrays;

/**
 * Seeded, counter-based random numbers built on the {@link Op#THREEFRY} primitive.
 *
 * <p>Element {@code i} (flat C-order index) of stream {@code s} is {@code threefry2x32(s * 2^48 + i,
 * seed)}: a pure function of the seed, the stream and the index, computed inside the IR. The numbers
 * therefore do not depend on the device, on how a device splits the work, or on earlier calls, and a
 * tensor's first elements are the same whatever its total size. Every distribution uses stream 0
 * except the second uniform of Box-Muller, which uses stream 1; so tensors drawn with the same seed
 * share their random words (e.g. {@code bernoulli(s, p)} is {@code rand(s) < p}), and independent
 * tensors need different seeds.
 *
 * <p>Conversions to floats are exact: a uniform of a float dtype takes as many top bits of the random
 * word as the dtype has significand bits ({@code p}) and scales them by {@code 2^-p}, so it lies on the
 * grid {@code k * 2^-p} in {@code [0, 1)}.
 */
final class RandomOps {
    private RandomOps() {}

    /** Counter stride between streams: the most elements one random tensor may have. */
    private static final long STREAM_STRIDE = 1L << 48;

    /** The raw u64 random words of {@code shape} for (seed, stream). */
    private static Tensor bits(String op, long seed, int stream, Shape shape, Device device) {
        if (shape.numel() > STREAM_STRIDE) {
            throw new IllegalArgumentException(op + ": shape " + shape + " has " + shape.numel() + " elements, more than the "
                    + STREAM_STRIDE + " one random stream holds");
        }
        Tensor counter = flatIndex(shape, device);
        if (stream != 0) counter = counter.add(stream * STREAM_STRIDE);
        // the seed is data (a one-element buffer), not a constant in the kernel, so every seed shares one kernel
        int[] ones = new int[shape.rank()];
        Arrays.fill(ones, 1);
        Tensor key = Tensor.of(DType.U64, new long[] {seed}).reshape(ones).expand(shape.toArray()).to(device);
        return new Tensor(UOp.of(Op.THREEFRY, DType.U64, null, counter.node(), key.node()), device);
    }

    /** The C-order flat index of every element as u64, built per axis so no axis limits the total. */
    private static Tensor flatIndex(Shape shape, Device device) {
        int rank = shape.rank();
        long[] strides = shape.strides();
        Tensor index = null;
        for (int a = 0; a < rank; a++) {
            int[] axisShape = new int[rank];
            Arrays.fill(axisShape, 1);
            axisShape[a] = shape.dim(a);
            Tensor along = Tensor.arange(shape.dim(a)).to(device).cast(DType.U64).reshape(axisShape);
            along = strides[a] == 1 ? along : along.mul(strides[a]);
            index = index == null ? along : index.add(along);
        }
        return index == null ? Tensor.full(0L, DType.U64).to(device) : index.broadcastTo(shape.toArray());
    }

    /** Significand bits of a float dtype: how many random bits a uniform of it holds exactly. */
    private static int precision(DType dtype) {
        return switch (dtype) {
            case F16 -> 11;
            case BF16 -> 8;
            case F32 -> 24;
            case F64 -> 53;
            default -> throw new AssertionError(dtype);
        };
    }

    /** Uniform values {@code k * 2^-p} in [0, 1) of a float dtype from the top {@code p} bits of each word. */
    private static Tensor unit(Tensor bits, DType dtype) {
        int p = precision(dtype);
        return bits.shr((long) (64 - p)).cast(dtype).mul(Math.scalb(1.0, -p));
    }

    static Tensor rand(long seed, DType dtype, int[] shape) {
        if (!dtype.isFloat()) {
            throw new IllegalArgumentException("rand: dtype must be a float dtype (f16, bf16, f32, f64), got " + dtype);
        }
        return unit(bits("rand", seed, 0, shapeOf("rand", shape), Tensor.defaultDevice()), dtype);
    }

    static Tensor uniform(long seed, double low, double high, int[] shape) {
        float lo = (float) low, hi = (float) high;
        if (!Float.isFinite(lo) || !Float.isFinite(hi) || !(lo < hi)) {
            throw new IllegalArgumentException("uniform: needs low < high, both finite in f32, got low " + low + ", high " + high);
        }
        Tensor r = rand(seed, DType.F32, shape).mul((double) hi - lo).add((double) lo);
        // rounding of lo + (hi - lo) * u can reach hi itself; keep the interval half-open
        return r.minimum((double) Math.nextDown(hi));
    }

    static Tensor randn(long seed, int[] shape) { return randn(seed, DType.F32, shape); }

    static Tensor randn(long seed, DType dtype, int[] shape) {
        if (dtype != DType.F32 && dtype != DType.F64) throw new IllegalArgumentException("randn: dtype must be f32 or f64, got " + dtype);
        Shape s = shapeOf("randn", shape);
        Device d = Tensor.defaultDevice();
        Tensor u1 = unit(bits("randn", seed, 0, s, d), dtype), u2 = unit(bits("randn", seed, 1, s, d), dtype);
        // Box-Muller; 1 - u1 lies in (0, 1], so the logarithm is finite
        Tensor radius = u1.rsub(1.0).log().mul(-2.0).sqrt();
        return radius.mul(u2.mul(2 * Math.PI).cos());
    }

    static Tensor normal(long seed, double mean, double std, int[] shape) {
        if (!Double.isFinite(mean) || !Double.isFinite(std) || std < 0) {
            throw new IllegalArgumentException("normal: needs a finite mean and a finite std >= 0, got mean " + mean + ", std " + std);
        }
        return randn(seed, shape).mul(std).add(mean);
    }

    static Tensor randint(long seed, long low, long high, DType dtype, int[] shape) {
        if (!dtype.isInt()) throw new IllegalArgumentException("randint: dtype must be an integer dtype, got " + dtype);
        if (high <= low) throw new IllegalArgumentException("randint: needs low < high, got low " + low + ", high " + high);
        boolean fits = dtype == DType.U64 ? low >= 0
                : dtype == DType.I64 || low >= dtype.minInt() && high - 1 <= dtype.maxInt();
        if (!fits) {
            throw new IllegalArgumentException("randint: range [" + low + ", " + high + ") does not fit " + dtype
                    + " [" + dtype.minInt() + ", " + dtype.maxInt() + "]");
        }
        Tensor words = bits("randint", seed, 0, shapeOf("randint", shape), Tensor.defaultDevice());
        // floor(u * (high - low)) with u = words / 2^64, exactly: the high half of the 128-bit product
        long range = high - low; // as unsigned, in [1, 2^64 - 1]
        return mulHigh(words, range).add(low).cast(dtype);
    }

    /** The high 64 bits of the 128-bit product of u64 values and an unsigned constant. */
    private static Tensor mulHigh(Tensor x, long c) {
        long mask = 0xFFFF_FFFFL;
        long c0 = c & mask, c1 = c >>> 32;
        Tensor x0 = x.bitwiseAnd(mask), x1 = x.shr(32L);
        Tensor p00 = x0.mul(c0), p01 = x0.mul(c1), p10 = x1.mul(c0), p11 = x1.mul(c1);
        // each part is below 2^64; the middle column collects the carries into the high half
        Tensor mid = p00.shr(32L).add(p01.bitwiseAnd(mask)).add(p10.bitwiseAnd(mask));
        return p11.add(p01.shr(32L)).add(p10.shr(32L)).add(mid.shr(32L));
    }

    static Tensor bernoulli(long seed, Tensor p) {
        DType dt = p.dtype() == DType.F64 ? DType.F64 : DType.F32;
        Tensor u = unit(bits("bernoulli", seed, 0, p.shape(), p.device()), dt);
        return u.lt(p.cast(dt));
    }

    static Tensor bernoulli(long seed, double p, int[] shape) {
        if (!(p >= 0 && p <= 1)) throw new IllegalArgumentException("bernoulli: probability must be in [0, 1], got " + p);
        Tensor u = unit(bits("bernoulli", seed, 0, shapeOf("bernoulli", shape), Tensor.defaultDevice()), DType.F64);
        return u.lt(p);
    }

    private static Shape shapeOf(String op, int[] shape) {
        for (int i = 0; i < shape.length; i++) {
            if (shape[i] < 0) {
                throw new IllegalArgumentException(op + ": shape " + Arrays.toString(shape) + " has negative dimension " + shape[i] + " at axis " + i);
            }
        }
        return Shape.of(shape);
    }
}
