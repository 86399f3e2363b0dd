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

/**
 * An embedding lookup: {@code tokens} rows of a {@code VOCAB x DIM} f32 table picked by i64 ids
 * ({@code indexSelect}, a one-hot sum in the IR that the lowerer folds into one read per element). The
 * cost should follow the rows read ({@code tokens * DIM * 4} bytes), not the table.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class GatherBench {
    static final int VOCAB = 32_000, DIM = 512;

    @Param({"CPU", "CLANG"})
    public String device;

    @Param({"16", "256"})
    public int tokens;

    private ExecutionPlan plan;

    @Setup(Level.Trial)
    public void prepare() {
        Tensor table = Tensor.randn(3, VOCAB, DIM).to(device).realize();
        long[] ids = new long[tokens];
        for (int i = 0; i < tokens; i++) ids[i] = (i * 7919L) % VOCAB;
        plan = table.indexSelect(0, Tensor.of(ids, tokens).to(device)).prepare();
        plan.execute();
    }

    @TearDown(Level.Trial)
    public void close() { plan.close(); }

    @Benchmark
    public void embeddingLookup() { plan.execute(); }
}
