package dev.kiln.bench;

import dev.kiln.Tensor;
import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.Device;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.types.DType;

import java.lang.foreign.ValueLayout;
import java.util.Locale;

/**
 * Kiln's side of {@link GemmPeerBench}: {@code a.matmul(b)} on one device, with both inputs already
 * realised there, prepared into a plan once; only {@link ExecutionPlan#execute()} is timed, as a
 * served model would call it.
 */
final class KilnGemm {
    private KilnGemm() {}

    /**
     * Times the product of the row-major n x n matrices {@code a} and {@code b} on {@code device}.
     * An unavailable device or a failure gives {@link GemmRun.Unavailable}, so that the other peers still run.
     */
    static GemmRun run(String device, float[] a, float[] b, int n, GemmRun.Timing timing) {
        String peer = "Kiln " + device;
        Device d;
        try {
            d = DeviceRegistry.get(device);
        } catch (RuntimeException e) {
            return new GemmRun.Unavailable(peer, GemmRun.reason(e));
        }
        try {
            Tensor ta = Tensor.of(a, n, n).to(d).realize(), tb = Tensor.of(b, n, n).to(d).realize();
            long t0 = System.nanoTime();
            ExecutionPlan plan = ta.matmul(tb).prepare();
            try {
                // The first execution still does one-time work (the output's pages faulted in, a CLANG
                // kernel's first-call check): it is reported with the prepare time, not among the timed runs.
                plan.execute();
                double prepareMs = (System.nanoTime() - t0) / 1e6;
                double[] ms = GemmRun.time(plan::execute, timing);
                return new GemmRun.Timed(peer, ms, product(plan.outputBuffer(0), n),
                        String.format(Locale.ROOT, "%d runs, prepare+1st %.0f ms", ms.length, prepareMs));
            } finally {
                plan.close();
            }
        } catch (RuntimeException e) {
            return new GemmRun.Unavailable(peer, "failed: " + GemmRun.reason(e));
        }
    }

    private static float[] product(Buffer out, int n) {
        long count = (long) n * n;
        if (out.dtype() != DType.F32 || out.count() != count) {
            throw new IllegalStateException("output is " + out + ", expected " + count + " x F32");
        }
        return out.segment().asSlice(0, count * Float.BYTES).toArray(ValueLayout.JAVA_FLOAT);
    }
}
