package dev.kiln.runtime;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * What this machine can do at most, measured: the roof of a roofline. A kernel's share of it says how
 * far the kernel is from the machine's limit ({@link ProfileReport#table(List, MachinePeak)}).
 *
 * <ul>
 *   <li><b>FMA peak</b>: f32 GFLOP/s (an FMA counts as two operations) of a register-resident loop of
 *       independent fused multiply-adds with the Vector API, for each vector width the CPU runs
 *       natively (every width from 128 bits up to the preferred shape's; never an emulated one), on
 *       one thread and on every worker of {@link WorkerPool}.</li>
 *   <li><b>Streaming bandwidth</b>: GB/s of a <em>read-sum</em> on every worker: each worker sums its
 *       own slice of one off-heap buffer far larger than the last-level cache (256 MiB) with vector
 *       adds. Only the bytes read are counted (each once per pass); nothing is written.</li>
 * </ul>
 *
 * Every figure is the best of repeated timed trials after the JIT has compiled the loop.
 * {@link MachinePeakCache} measures once per machine and keeps the figures on disk.
 *
 * @param threads    the number of threads of the all-core figures (the worker pool's size)
 * @param fma        the FMA peak at each native vector width, narrowest first
 * @param streamGBps streaming read bandwidth on all cores, in GB/s
 */
public record MachinePeak(int threads, List<VectorPeak> fma, double streamGBps) {
    /** The measuring time {@link #measure()} spends: the default of {@code kiln devices}. */
    public static final Duration DEFAULT_BUDGET = Duration.ofMillis(1500);

    /**
     * The f32 FMA peak at one vector width.
     *
     * @param bits            the vector width in bits (128, 256 or 512)
     * @param oneThreadGflops GFLOP/s on one thread
     * @param allCoresGflops  GFLOP/s on all {@link MachinePeak#threads()} threads together
     */
    public record VectorPeak(int bits, double oneThreadGflops, double allCoresGflops) {
        public VectorPeak {
            if (bits <= 0 || !positive(oneThreadGflops) || !positive(allCoresGflops)) {
                throw new IllegalArgumentException("VectorPeak: bits and figures must be positive and finite, got "
                        + bits + ", " + oneThreadGflops + ", " + allCoresGflops);
            }
        }
    }

    /** @throws IllegalArgumentException unless every figure is positive and finite and the widths are distinct */
    public MachinePeak {
        if (threads <= 0 || !positive(streamGBps)) {
            throw new IllegalArgumentException("MachinePeak: threads and bandwidth must be positive and finite, got " + threads + ", " + streamGBps);
        }
        fma = new ArrayList<>(fma).stream().sorted(Comparator.comparingInt(VectorPeak::bits)).toList();
        if (fma.stream().map(VectorPeak::bits).distinct().count() != fma.size()) {
            throw new IllegalArgumentException("MachinePeak: a vector width appears twice: " + fma);
        }
    }

    /** Measures this machine within about {@link #DEFAULT_BUDGET}. */
    public static MachinePeak measure() { return measure(DEFAULT_BUDGET); }

    /**
     * Measures this machine within about {@code budget} (plus the time to allocate the streaming
     * buffer, and a quarter of the budget again for each width whose figures look timed before the JIT compiled its
     * loop, measured once more); a small budget gives lower, noisier figures, never zero ones.
     */
    public static MachinePeak measure(Duration budget) {
        return PeakMeasurement.measure(budget, PeakMeasurement.DEFAULT_STREAM_BYTES);
    }

    /** The vector widths in bits this CPU runs natively: 128 up to the Vector API's preferred shape. */
    public static List<Integer> nativeWidths() { return PeakMeasurement.nativeWidths(); }

    /** The FMA peak at the widest native width; empty when the CPU has no vector width of 128 bits or more. */
    public Optional<VectorPeak> widest() { return fma.isEmpty() ? Optional.empty() : Optional.of(fma.getLast()); }

    /** The roof for compute: all-core GFLOP/s at the widest native width, or 0 when there is none. */
    public double peakGflops() { return widest().map(VectorPeak::allCoresGflops).orElse(0.0); }

    /**
     * One line for people, widest width first, e.g.
     * {@code peak f32 FMA: 512-bit 2 threads 431 GFLOP/s (1 thread 216), 256-bit ...; streaming 35 GB/s}.
     */
    public String summary() {
        StringBuilder sb = new StringBuilder("peak f32 FMA: ");
        if (fma.isEmpty()) sb.append("no native vector width");
        for (VectorPeak p : fma.reversed()) {
            if (p != fma.getLast()) sb.append(", ");
            sb.append(p.bits()).append("-bit ").append(threads).append(threads == 1 ? " thread " : " threads ")
                    .append(figure(p.allCoresGflops())).append(" GFLOP/s (1 thread ").append(figure(p.oneThreadGflops())).append(')');
        }
        return sb.append("; streaming ").append(figure(streamGBps)).append(" GB/s").toString();
    }

    /** Whole numbers where they are large enough for the noise to hide the fraction. */
    private static String figure(double v) {
        return String.format(Locale.ROOT, v >= 100 ? "%.0f" : v >= 10 ? "%.1f" : "%.3g", v);
    }

    private static boolean positive(double v) { return v > 0 && Double.isFinite(v); }
}
