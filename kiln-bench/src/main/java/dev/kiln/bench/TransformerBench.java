package dev.kiln.bench;

import dev.kiln.Tensor;
import dev.kiln.models.SmallModels;
import dev.kiln.runtime.ExecutionPlan;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import java.util.concurrent.TimeUnit;

/** The demo's transformer block (d=32, 4 heads, causal, seq 8) run through a prepared plan. */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class TransformerBench {
    @Param("CPU")
    public String device;

    private ExecutionPlan plan;

    @Setup(Level.Trial)
    public void prepare() {
        Tensor tokens = Tensor.randn(200, 1, 8, 32).to(device).realize();
        plan = SmallModels.transformerBlock(tokens, 4).prepare();
    }

    @Benchmark
    public void block() { plan.execute(); }

    @TearDown(Level.Trial)
    public void close() { plan.close(); }
}
