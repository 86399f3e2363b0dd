package dev.kiln.serve;

import dev.kiln.types.Variable;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.IntFunction;

/**
 * One compiled graph per size bucket of a sequence axis. A bucket is a range of actual extents
 * {@code (previous upper, upper]} served by the graph compiled at {@code upper}: the builder makes that
 * graph with its bucketed axis symbolic, a {@link Variable} whose maximum is {@code upper}
 * ({@code Shape.symbolic(new Variable("seq", 1, upper), 64)}), so every kernel loops only over the
 * active rows and the run time follows the actual extent, not the bucket's.
 *
 * <p>{@link #runPadded} pads the inputs along their symbolic axis to the bucket's extent, sets the active
 * extent, runs, and slices the outputs' symbolic axes back to the actual extent. Compiled graphs are
 * kept until {@link #close()}; compiling is thread-safe (each bucket compiles once), running one bucket's
 * graph is not (use {@link CompiledGraph#copy()} per thread).
 */
public final class BucketedCompileCache implements AutoCloseable {
    /** The actual extents {@code lower..upper} (inclusive) that run in the graph compiled at {@code upper}. */
    public record Bucket(int lower, int upper) {}

    private final Session session;
    private final int[] uppers;
    private final Map<Integer, CompiledGraph> compiled = new ConcurrentHashMap<>();

    /**
     * Buckets with the given upper extents (ascending, each at least 1); the first bucket starts at 1.
     *
     * @throws IllegalArgumentException if there are none or they do not ascend
     */
    public BucketedCompileCache(Session session, int... uppers) {
        this.session = Objects.requireNonNull(session, "session");
        if (uppers.length == 0) throw new IllegalArgumentException("BucketedCompileCache: needs at least one bucket");
        for (int i = 0; i < uppers.length; i++) {
            if (uppers[i] < 1 || i > 0 && uppers[i] <= uppers[i - 1]) {
                throw new IllegalArgumentException("BucketedCompileCache: bucket extents must ascend from 1, got " + Arrays.toString(uppers));
            }
        }
        this.uppers = uppers.clone();
    }

    /**
     * Buckets at the powers of two from {@code min} to {@code max} (each rounded up to a power of two), e.g.
     * 8..256 gives extents 8, 16, 32, 64, 128 and 256; actual extents 1..8 use the first.
     *
     * @throws IllegalArgumentException unless {@code 1 <= min <= max <= 2^30}
     */
    public static BucketedCompileCache powerOfTwoLadder(Session session, int min, int max) {
        if (min < 1 || max < min || max > 1 << 30) {
            throw new IllegalArgumentException("powerOfTwoLadder: needs 1 <= min <= max <= 2^30, got min " + min + ", max " + max);
        }
        List<Integer> out = new ArrayList<>();
        for (int e = Integer.highestOneBit(min) == min ? min : Integer.highestOneBit(min) << 1; ; e <<= 1) {
            out.add(e);
            if (e >= max) break;
        }
        return new BucketedCompileCache(session, out.stream().mapToInt(Integer::intValue).toArray());
    }

    /** The buckets, smallest first. */
    public List<Bucket> buckets() {
        List<Bucket> out = new ArrayList<>();
        for (int i = 0; i < uppers.length; i++) out.add(new Bucket(i == 0 ? 1 : uppers[i - 1] + 1, uppers[i]));
        return List.copyOf(out);
    }

    /**
     * The bucket an actual extent runs in.
     *
     * @throws IllegalArgumentException if {@code actual} is below 1 or above the largest bucket
     */
    public Bucket bucketFor(int actual) {
        for (Bucket b : buckets()) if (actual >= b.lower() && actual <= b.upper()) return b;
        throw new IllegalArgumentException("bucketFor: extent " + actual + " is outside the buckets [1, " + uppers[uppers.length - 1] + "]");
    }

    /**
     * The graph of {@code actual}'s bucket, compiled on first use from {@code builder.apply(upper)}.
     *
     * @throws IllegalArgumentException if {@code actual} is outside the buckets, or the built graph's inputs
     *     have no symbolic axis of maximum {@code upper}
     */
    public CompiledGraph getOrCompile(int actual, IntFunction<Graph> builder) {
        Objects.requireNonNull(builder, "builder");
        Bucket b = bucketFor(actual);
        return compiled.computeIfAbsent(b.upper(), upper -> {
            CompiledGraph g = session.compile(builder.apply(upper));
            Variable v;
            try {
                v = g.extentVariable("getOrCompile");
            } catch (IllegalStateException e) {
                g.close();
                throw new IllegalArgumentException("getOrCompile: the graph built for bucket " + upper + " cannot run at an active extent: "
                        + e.getMessage(), e);
            }
            if (v.max() != upper) {
                g.close();
                throw new IllegalArgumentException("getOrCompile: the graph built for bucket " + upper + " has symbolic axis '" + v.name()
                        + "' of maximum " + v.max() + ", not " + upper);
            }
            return g;
        });
    }

    /**
     * Runs {@code inputs} of actual extent {@code actual} in its bucket's graph: each input with a
     * symbolic axis holds {@code actual} rows along it and is padded (with zeros, never read) to the
     * bucket's extent; the other inputs are given whole. The outputs' symbolic axes are sliced back to
     * {@code actual}; outputs without one are returned whole.
     *
     * @throws IllegalArgumentException for an unknown input, or one whose length is not its shape with
     *     {@code actual} rows along its symbolic axis
     */
    public List<float[]> runPadded(int actual, Map<String, float[]> inputs, IntFunction<Graph> builder) {
        CompiledGraph g = getOrCompile(actual, builder);
        Variable v = g.extentVariable("runPadded");
        Map<String, float[]> padded = new java.util.HashMap<>();
        for (var e : inputs.entrySet()) {
            TensorSpec spec = g.inputs().stream().filter(s -> s.name().equals(e.getKey())).findFirst()
                    .orElseThrow(() -> new IllegalArgumentException("runPadded: unknown input '" + e.getKey() + "'; inputs are " + g.inputs()));
            padded.put(e.getKey(), resize(spec, v, e.getValue(), actual, "runPadded", true));
        }
        g.setActiveExtent(actual, (int) v.max());
        List<float[]> out = g.run(padded);
        List<float[]> sliced = new ArrayList<>(out.size());
        for (int i = 0; i < out.size(); i++) sliced.add(resize(g.outputs().get(i), v, out.get(i), actual, "runPadded", false));
        return sliced;
    }

    /**
     * Along {@code spec}'s axes of variable {@code v}: {@code pad} copies {@code actual} rows into a zeroed
     * array of the maximum; else keeps the first {@code actual} rows of a maximum-sized array.
     */
    private static float[] resize(TensorSpec spec, Variable v, float[] data, int actual, String op, boolean pad) {
        int[] full = spec.shape().toArray();
        int[] active = full.clone();
        boolean symbolic = false;
        for (int a = 0; a < full.length; a++) {
            if (v.equals(spec.shape().variable(a))) {
                active[a] = actual;
                symbolic = true;
            }
        }
        if (!symbolic) return data;
        long activeCount = 1;
        for (int d : active) activeCount *= d;
        if (pad && data.length != activeCount) {
            throw new IllegalArgumentException(op + ": input '" + spec.name() + "' " + spec.shape() + " at extent " + actual + " expects "
                    + activeCount + " values (shape " + Arrays.toString(active) + "), got " + data.length);
        }
        float[] out = new float[Math.toIntExact(pad ? spec.numel() : activeCount)];
        int[] idx = new int[full.length];
        long[] fullStrides = spec.shape().strides();
        for (int i = 0; i < activeCount; i++) {
            long f = 0;
            for (int a = 0; a < full.length; a++) f += idx[a] * fullStrides[a];
            if (pad) out[(int) f] = data[i];
            else out[i] = data[(int) f];
            for (int a = full.length - 1; a >= 0; a--) { // next index of the active shape, C order
                if (++idx[a] < active[a]) break;
                idx[a] = 0;
            }
        }
        return out;
    }

    /** Closes every compiled graph. */
    @Override
    public void close() {
        compiled.values().forEach(CompiledGraph::close);
        compiled.clear();
    }
}
