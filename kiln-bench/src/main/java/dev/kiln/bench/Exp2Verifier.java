package dev.kiln.bench;

import dev.kiln.Tensor;
import dev.kiln.runtime.ExecutionPlan;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.IntStream;

/**
 * Checks the CPU device's f32 {@code exp2} against its definition, {@code (float) Math.pow(2, x)}, for
 * every float bit pattern (all 2^32 of them; about two minutes on two cores), bit for bit. The CPU
 * renderer computes it with a polynomial and falls back to Math.pow near rounding midpoints; this is
 * the exhaustive evidence behind that helper, run by hand after changing it:
 * {@code java --add-modules jdk.incubator.vector -cp "kiln-bench/target/classes:kiln-bench/target/lib/*" dev.kiln.bench.Exp2Verifier}.
 * Exits with status 1 and the first mismatches when any bit pattern differs.
 */
public final class Exp2Verifier {
    private static final int CHUNK = 1 << 24;
    private static final ValueLayout.OfInt I = ValueLayout.JAVA_INT;

    private Exp2Verifier() {}

    public static void main(String[] args) {
        Tensor input = Tensor.zeros(CHUNK).to("CPU").contiguous().realize();
        MemorySegment in = input.buffer().segment();
        AtomicLong mismatches = new AtomicLong();
        long start = System.nanoTime();
        try (ExecutionPlan plan = input.exp2().prepare()) {
            MemorySegment out = plan.outputBuffer().segment();
            for (long base = 0; base < 1L << 32; base += CHUNK) {
                long b = base;
                IntStream.range(0, CHUNK).parallel().forEach(i -> in.setAtIndex(I, i, (int) (b + i)));
                plan.execute();
                IntStream.range(0, CHUNK).parallel().forEach(i -> {
                    float x = Float.intBitsToFloat((int) (b + i));
                    int want = Float.floatToRawIntBits((float) Math.pow(2, x));
                    int got = out.getAtIndex(I, i);
                    if (got != want && !(Float.isNaN(Float.intBitsToFloat(got)) && Float.isNaN(Float.intBitsToFloat(want)))
                            && mismatches.incrementAndGet() <= 20) {
                        System.out.printf("exp2(%s) [bits %08x]: got %s, want %s%n", x, (int) (b + i), Float.intBitsToFloat(got), Float.intBitsToFloat(want));
                    }
                });
            }
        }
        System.out.printf("exp2 f32 on CPU: %d of 2^32 bit patterns differ from (float) Math.pow(2, x) (%.0f s)%n",
                mismatches.get(), (System.nanoTime() - start) / 1e9);
        if (mismatches.get() != 0) System.exit(1);
    }
}
