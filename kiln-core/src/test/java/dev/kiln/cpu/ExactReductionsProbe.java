package dev.kiln.cpu;

import dev.kiln.Tensor;
import dev.kiln.codegen.ReductionOrder;
import dev.kiln.runtime.Buffer;
import dev.kiln.runtime.DeviceRegistry;
import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.testing.TestGraphs;

import java.util.Map;

/**
 * Run by {@link ExactReductionsTest} in a JVM of its own (the order is chosen once per process): prints the
 * order, whether the matmul ran as the packed GEMM, and whether CPU and CLANG equal INTERP bit for bit.
 */
public final class ExactReductionsProbe {
    public static void main(String[] args) {
        Tensor a = TestGraphs.data(1, 96, 200), b = TestGraphs.data(2, 200, 64), rows = TestGraphs.data(3, 64, 4096);
        System.out.println("order=" + ReductionOrder.current());
        for (String device : new String[]{"CPU", "CLANG"}) {
            if (DeviceRegistry.providers().get(device).unavailableReason().isPresent()) continue;
            report(device + " matmul", a.to(device).matmul(b.to(device)));
            report(device + " sum", rows.to(device).sum(1));
        }
    }

    private static void report(String what, Tensor y) {
        Buffer want = DeviceRegistry.get("INTERP").realize(y.uop(), Map.of());
        try (ExecutionPlan plan = y.prepare()) {
            plan.execute();
            boolean gemm = plan.kernels().stream().anyMatch(k -> k.source().contains("packed GEMM"));
            Buffer got = plan.outputBuffer();
            boolean same = true;
            for (long i = 0; i < want.count(); i++) {
                same &= Double.doubleToRawLongBits(want.getDouble(i)) == Double.doubleToRawLongBits(got.getDouble(i));
            }
            System.out.println(what + ": gemm=" + gemm + " bitsEqualInterp=" + same);
        }
    }
}
