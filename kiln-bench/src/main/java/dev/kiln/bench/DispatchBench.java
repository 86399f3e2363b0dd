package dev.kiln.bench;

import dev.kiln.Tensor;
import dev.kiln.runtime.ExecutionPlan;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import java.util.concurrent.TimeUnit;

/** A replayed plan of 1000 tiny kernels: the score is the cost per kernel. */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class DispatchBench {
    static final int KERNELS = 1000;

    @Param("CPU")
    public String device;

    private ExecutionPlan plan;

    @Setup(Level.Trial)
    public void prepare() {
        Tensor x = Tensor.ones(4).to(device).realize();
        for (int i = 0; i < KERNELS; i++) x = x.add(1).contiguous(); // contiguous(): one kernel each
        plan = x.prepare();
        if (plan.kernels().size() != KERNELS) throw new IllegalStateException("expected " + KERNELS + " kernels, got " + plan.kernels().size());
    }

    @Benchmark
    @OperationsPerInvocation(KERNELS)
    public void replay() { plan.execute(); }

    @TearDown(Level.Trial)
    public void close() { plan.close(); }
}
