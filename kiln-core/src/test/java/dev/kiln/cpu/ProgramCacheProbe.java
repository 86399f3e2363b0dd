package dev.kiln.cpu;

import dev.kiln.Tensor;
import dev.kiln.models.SmallModels;
import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.compile.KernelCache;
import dev.kiln.runtime.PreparedKernel;

import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;

/**
 * Run in a fresh JVM by {@link ProgramCacheProcessTest}: prepares and runs three transformer blocks
 * and prints the program cache's counters and digests of the output's bits and of the kernels.
 */
public final class ProgramCacheProbe {
    private ProgramCacheProbe() {}

    public static void main(String[] args) throws Exception {
        Tensor x = Tensor.randn(1, 1, 8, 32).to("CPU").realize();
        for (int layer = 0; layer < 3; layer++) x = SmallModels.transformerBlock(x, 2, 100L * layer);
        try (ExecutionPlan plan = x.prepare()) {
            KernelCache.Stats s = CpuDevice.programCacheStats();
            System.out.println("compiles=" + s.compiles() + " diskHits=" + s.diskHits() + " corrupt=" + s.corruptDiscarded());
            plan.execute();
            var out = plan.outputBuffer();
            MessageDigest bits = MessageDigest.getInstance("SHA-256");
            for (long i = 0; i < out.count(); i++) {
                int b = Float.floatToRawIntBits(out.segment().getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, i));
                bits.update(new byte[] {(byte) (b >>> 24), (byte) (b >>> 16), (byte) (b >>> 8), (byte) b});
            }
            System.out.println("output=" + HexFormat.of().formatHex(bits.digest()));
            MessageDigest kernels = MessageDigest.getInstance("SHA-256");
            for (PreparedKernel k : plan.kernels()) {
                kernels.update((k.name() + "\n" + k.program() + "\n" + k.source()).getBytes(StandardCharsets.UTF_8));
            }
            System.out.println("kernels=" + HexFormat.of().formatHex(kernels.digest()));
        }
    }
}
