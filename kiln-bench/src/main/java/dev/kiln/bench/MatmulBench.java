package dev.kiln.bench;

import dev.kiln.Tensor;
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

/** f32 matmul n x n x n through a prepared plan; GFLOP/s = 2 n^3 / time. */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
public class MatmulBench {
    @Param("CPU")
    public String device;

    @Param("1024")
    public int n;

    private ExecutionPlan plan;

    @Setup(Level.Trial)
    public void prepare() {
        Tensor a = Tensor.rand(1, n, n).to(device).realize(), b = Tensor.rand(2, n, n).to(device).realize();
        plan = a.matmul(b).prepare();
    }

    @Benchmark
    public void matmul() { plan.execute(); }

    @TearDown(Level.Trial)
    public void close() { plan.close(); }
}
