package dev.kiln.bench;

import dev.kiln.Tensor;
import dev.kiln.models.SmallModels;
import dev.kiln.runtime.ExecutionPlan;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;

import java.util.concurrent.TimeUnit;

/**
 * {@code prepare()} of 12 transformer blocks in a fresh JVM (single shot). Run with
 * {@code -jvmArgsAppend -Dkiln.cache.dir=off} for a cold compile, and with a populated cache directory
 * for the warm-disk-cache figure.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
public class CompileBench {
    @Param("CPU")
    public String device;

    private Tensor model;

    /** The graph (and its realised weights) exist before the timed call, as in a server that loaded a model. */
    @Setup(Level.Trial)
    public void build() {
        Tensor x = Tensor.randn(1, 1, 16, 64).to(device).realize();
        for (int layer = 0; layer < 12; layer++) x = SmallModels.transformerBlock(x, 4, 100L * layer);
        model = x;
    }

    @Benchmark
    public int prepareTwelveBlocks() {
        try (ExecutionPlan plan = model.prepare()) {
            return plan.kernels().size();
        }
    }
}
