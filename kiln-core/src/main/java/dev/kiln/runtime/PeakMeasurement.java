package dev.kiln.runtime;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ForkJoinTask;
import java.util.function.IntFunction;
import java.util.function.LongToDoubleFunction;
import java.util.function.LongUnaryOperator;
import java.util.stream.IntStream;

/**
 * The loops behind {@link MachinePeak}: FMA throughput per native vector width and streaming read
 * bandwidth, each the best of timed trials within a share of the budget.
 */
final class PeakMeasurement {
    /** The streaming buffer: far larger than any last-level cache, so every pass reads memory. */
    static final long DEFAULT_STREAM_BYTES = 256L << 20;
    /** Widths the measurement knows; the CPU's native ones are those up to the preferred shape. */
    private static final List<Integer> WIDTHS = List.of(128, 256, 512);
    private static final VectorSpecies<Float> S128 = FloatVector.SPECIES_128;
    private static final VectorSpecies<Float> S256 = FloatVector.SPECIES_256;
    private static final VectorSpecies<Float> S512 = FloatVector.SPECIES_512;
    private static final VectorSpecies<Float> STREAM = FloatVector.SPECIES_PREFERRED;
    /** Independent accumulators of each FMA loop (c0..c9): FMA latency (4 cycles) times FMA ports (2), with room to spare. */
    private static final int ACCUMULATORS = 10;
    /** Every measurement keeps at least this many trials, so that even a tiny budget times compiled code at least once. */
    private static final int MIN_TRIALS = 3;
    /** Trials grow until one lasts this long, so the timer's resolution and the dispatch do not count. */
    private static final long TARGET_TRIAL_NANOS = 2_000_000;
    /** Where the loops' results go, so that the JIT cannot drop the work. */
    @SuppressWarnings("unused")
    private static volatile double sink;

    private PeakMeasurement() {}

    static List<Integer> nativeWidths() {
        int preferred = VectorShape.preferredShape().vectorBitSize();
        return WIDTHS.stream().filter(bits -> bits <= preferred).toList();
    }

    static MachinePeak measure(Duration budget, long streamBytes) {
        List<Integer> widths = nativeWidths();
        int threads = WorkerPool.size();
        WorkerPool.warmUp();
        // Shares: one for each FMA figure, two for streaming (a pass is long, so it has fewer trials to pick from).
        long share = Math.max(1, budget.toNanos() / (2L * widths.size() + 2));
        List<MachinePeak.VectorPeak> fma = new ArrayList<>();
        for (int bits : widths) fma.add(fmaPeak(bits, share, threads));
        fma = remeasureCold(fma, threads, bits -> fmaPeak(bits, share, threads));
        return new MachinePeak(threads, fma, streamGBps(2 * share, streamBytes, threads));
    }

    /** The FMA peak at {@code bits}, on one thread and on {@code threads}, each the best of trials within {@code share} ns. */
    private static MachinePeak.VectorPeak fmaPeak(int bits, long share, int threads) {
        LongUnaryOperator loop = fmaLoop(bits);
        double flopsPerIteration = 2.0 * ACCUMULATORS * (bits / Float.SIZE);
        double one = best(share, iterations -> time(() -> sink = loop.applyAsLong(iterations)), flopsPerIteration);
        double all = threads == 1 ? one
                : best(share, iterations -> onAllCores(threads, () -> sink = loop.applyAsLong(iterations)), flopsPerIteration * threads);
        return new MachinePeak.VectorPeak(bits, one, all);
    }

    /**
     * A width whose rate on one thread is below this share of its rate per thread on all cores, or whose rate per lane
     * is below this share of the best width's, was likely timed before the JIT compiled its loop.
     */
    static final double COLD_SHARE = 0.25;

    /**
     * {@code peaks} with each width that looks cold measured once more by {@code measure}, keeping the better figures.
     * Each loop's one-thread trials run first, and their share of the budget can pass before the JIT has compiled it
     * (the Vector API unintrinsified is hundreds of times slower): a machine's cached 128-bit peak read 0.58 GFLOP/s
     * beside 80 at 256 bits, and a fresh measurement on a 2-core Xeon read 0.14, 0.19 and 0.64 GFLOP/s on one thread at
     * 128, 256 and 512 bits against 54, 99 and 208 on both cores, timed just after. By now every loop has run compiled.
     */
    static List<MachinePeak.VectorPeak> remeasureCold(List<MachinePeak.VectorPeak> peaks, int threads, IntFunction<MachinePeak.VectorPeak> measure) {
        double bestPerLane = bestPerLane(peaks);
        List<MachinePeak.VectorPeak> out = new ArrayList<>();
        for (MachinePeak.VectorPeak p : peaks) {
            if (!cold(p, bestPerLane, threads)) {
                out.add(p);
                continue;
            }
            MachinePeak.VectorPeak again = measure.apply(p.bits());
            out.add(new MachinePeak.VectorPeak(p.bits(), Math.max(p.oneThreadGflops(), again.oneThreadGflops()),
                    Math.max(p.allCoresGflops(), again.allCoresGflops())));
        }
        return out;
    }

    /** Whether any of {@code peaks} looks timed before its loop was compiled (see {@link #remeasureCold}). */
    static boolean anyCold(List<MachinePeak.VectorPeak> peaks, int threads) {
        double bestPerLane = bestPerLane(peaks);
        return peaks.stream().anyMatch(p -> cold(p, bestPerLane, threads));
    }

    private static boolean cold(MachinePeak.VectorPeak p, double bestPerLane, int threads) {
        return perLane(p) < COLD_SHARE * bestPerLane || p.oneThreadGflops() < COLD_SHARE * p.allCoresGflops() / threads;
    }

    private static double bestPerLane(List<MachinePeak.VectorPeak> peaks) { return peaks.stream().mapToDouble(PeakMeasurement::perLane).max().orElse(0); }

    private static double perLane(MachinePeak.VectorPeak p) { return p.oneThreadGflops() / (p.bits() / Float.SIZE); }

    /**
     * The best rate in work units per nanosecond (GFLOP/s, GB/s) over trials until {@code nanos} have
     * passed and at least {@link #MIN_TRIALS} trials have run at full length.
     *
     * @param trial        runs the work for a number of iterations and returns its wall time in nanoseconds
     * @param perIteration work units per iteration
     */
    private static double best(long nanos, LongToDoubleFunction trial, double perIteration) {
        long deadline = System.nanoTime() + nanos;
        long iterations = 1;
        int fullTrials = 0;
        double best = 0;
        while (fullTrials < MIN_TRIALS || System.nanoTime() < deadline) {
            double elapsed = Math.max(1, trial.applyAsDouble(iterations));
            best = Math.max(best, iterations * perIteration / elapsed);
            if (elapsed < TARGET_TRIAL_NANOS && iterations < Long.MAX_VALUE / 2) iterations *= 2;
            else fullTrials++;
        }
        return best;
    }

    private static double time(Runnable work) {
        long start = System.nanoTime();
        work.run();
        return System.nanoTime() - start;
    }

    /** Wall time of {@code work} run once on each of {@code threads} workers at the same time. */
    private static double onAllCores(int threads, Runnable work) { return onAllCores(threads, worker -> work); }

    /** Wall time of {@code work.apply(i)} run on worker {@code i} of {@code threads}, all at the same time. */
    private static double onAllCores(int threads, IntFunction<Runnable> work) {
        long start = System.nanoTime();
        IntStream.range(0, threads).mapToObj(i -> WorkerPool.pool().submit(work.apply(i))).toList().forEach(ForkJoinTask::join);
        return System.nanoTime() - start;
    }

    private static LongUnaryOperator fmaLoop(int bits) {
        return switch (bits) {
            case 128 -> PeakMeasurement::fma128;
            case 256 -> PeakMeasurement::fma256;
            case 512 -> PeakMeasurement::fma512;
            default -> throw new IllegalArgumentException("no FMA loop for " + bits + " bits");
        };
    }

    // One method per width, each with its species a constant: the JIT turns Vector API calls into
    // single instructions only where the species is a compile-time constant. One loop taking the species
    // as a parameter (called by three one-line wrappers) was tried: it ran boxed, 60 times slower.

    private static long fma128(long iterations) {
        FloatVector a = FloatVector.broadcast(S128, 0.999f), b = FloatVector.broadcast(S128, 1e-3f);
        FloatVector c0 = a, c1 = b, c2 = a.add(b), c3 = a.sub(b), c4 = a.mul(a), c5 = b.mul(b), c6 = a.neg(), c7 = b.neg(), c8 = a.add(a), c9 = b.add(b);
        for (long i = 0; i < iterations; i++) {
            c0 = c0.fma(a, b); c1 = c1.fma(a, b); c2 = c2.fma(a, b); c3 = c3.fma(a, b); c4 = c4.fma(a, b);
            c5 = c5.fma(a, b); c6 = c6.fma(a, b); c7 = c7.fma(a, b); c8 = c8.fma(a, b); c9 = c9.fma(a, b);
        }
        return Float.floatToRawIntBits(c0.add(c1).add(c2).add(c3).add(c4).add(c5).add(c6).add(c7).add(c8).add(c9).reduceLanes(VectorOperators.ADD));
    }

    private static long fma256(long iterations) {
        FloatVector a = FloatVector.broadcast(S256, 0.999f), b = FloatVector.broadcast(S256, 1e-3f);
        FloatVector c0 = a, c1 = b, c2 = a.add(b), c3 = a.sub(b), c4 = a.mul(a), c5 = b.mul(b), c6 = a.neg(), c7 = b.neg(), c8 = a.add(a), c9 = b.add(b);
        for (long i = 0; i < iterations; i++) {
            c0 = c0.fma(a, b); c1 = c1.fma(a, b); c2 = c2.fma(a, b); c3 = c3.fma(a, b); c4 = c4.fma(a, b);
            c5 = c5.fma(a, b); c6 = c6.fma(a, b); c7 = c7.fma(a, b); c8 = c8.fma(a, b); c9 = c9.fma(a, b);
        }
        return Float.floatToRawIntBits(c0.add(c1).add(c2).add(c3).add(c4).add(c5).add(c6).add(c7).add(c8).add(c9).reduceLanes(VectorOperators.ADD));
    }

    private static long fma512(long iterations) {
        FloatVector a = FloatVector.broadcast(S512, 0.999f), b = FloatVector.broadcast(S512, 1e-3f);
        FloatVector c0 = a, c1 = b, c2 = a.add(b), c3 = a.sub(b), c4 = a.mul(a), c5 = b.mul(b), c6 = a.neg(), c7 = b.neg(), c8 = a.add(a), c9 = b.add(b);
        for (long i = 0; i < iterations; i++) {
            c0 = c0.fma(a, b); c1 = c1.fma(a, b); c2 = c2.fma(a, b); c3 = c3.fma(a, b); c4 = c4.fma(a, b);
            c5 = c5.fma(a, b); c6 = c6.fma(a, b); c7 = c7.fma(a, b); c8 = c8.fma(a, b); c9 = c9.fma(a, b);
        }
        return Float.floatToRawIntBits(c0.add(c1).add(c2).add(c3).add(c4).add(c5).add(c6).add(c7).add(c8).add(c9).reduceLanes(VectorOperators.ADD));
    }

    /**
     * Read bandwidth in GB/s: every worker sums its slice of one {@code bytes}-byte buffer per pass;
     * the best pass within {@code nanos} (and at least {@link #MIN_TRIALS}).
     */
    private static double streamGBps(long nanos, long bytes, int threads) {
        long unit = 4L * STREAM.vectorByteSize() * threads;
        long size = Math.max(unit, bytes / unit * unit);
        long slice = size / threads;
        try (Arena arena = Arena.ofShared()) {
            MemorySegment buffer = arena.allocate(size, 64);
            IntFunction<Runnable> pass = t -> () -> sink = readSum(buffer, t * slice, (t + 1) * slice);
            long deadline = System.nanoTime() + nanos;
            double best = 0;
            for (int i = 0; i < MIN_TRIALS || System.nanoTime() < deadline; i++) {
                best = Math.max(best, size / Math.max(1, onAllCores(threads, pass)));
            }
            return best;
        }
    }

    /** The sum of the floats in {@code [from, to)} (bytes; a multiple of four vectors long), four accumulators deep. */
    private static float readSum(MemorySegment segment, long from, long to) {
        ByteOrder order = ByteOrder.nativeOrder();
        long step = STREAM.vectorByteSize();
        FloatVector s0 = FloatVector.zero(STREAM), s1 = s0, s2 = s0, s3 = s0;
        for (long i = from; i < to; i += 4 * step) {
            s0 = s0.add(FloatVector.fromMemorySegment(STREAM, segment, i, order));
            s1 = s1.add(FloatVector.fromMemorySegment(STREAM, segment, i + step, order));
            s2 = s2.add(FloatVector.fromMemorySegment(STREAM, segment, i + 2 * step, order));
            s3 = s3.add(FloatVector.fromMemorySegment(STREAM, segment, i + 3 * step, order));
        }
        return s0.add(s1).add(s2).add(s3).reduceLanes(VectorOperators.ADD);
    }
}
