package dev.kiln.bench;

import dev.kiln.types.DType;
import dev.kiln.types.Shape;
import dev.kiln.Tensor;
import dev.kiln.types.Variable;
import dev.kiln.models.SmallModels;
import dev.kiln.runtime.ExecutionPlan;
import dev.kiln.serve.BucketedCompileCache;
import dev.kiln.serve.Graph;
import dev.kiln.serve.Session;
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

import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A transformer block (d=64, 4 heads, causal) compiled once for sequences of up to {@code MAX} tokens
 * with a symbolic sequence axis, run at {@code seq} tokens ({@code symbolic}), against a plan compiled
 * for exactly {@code seq} tokens ({@code exact}), and through the serving API's bucket ladder 8..MAX with
 * padding ({@code padded}: {@link BucketedCompileCache#runPadded}, the graph of the bucket of {@code seq}).
 * The symbolic plan's time should follow {@code seq}, not {@code MAX}.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class ActiveExtentBench {
    static final int MAX = 256, DIM = 64, HEADS = 4;

    @Param("CPU")
    public String device;

    @Param({"16", "64", "256"})
    public int seq;

    private ExecutionPlan symbolic, exact;
    private Map<String, Long> vars;
    private BucketedCompileCache ladder;
    private Map<String, float[]> tokens;

    @Setup(Level.Trial)
    public void prepare() {
        Variable len = new Variable("seq", 1, MAX);
        Tensor padded = Tensor.randn(7, 1, MAX, DIM).to(device).realize();
        symbolic = SmallModels.transformerBlock(padded.withSymbolicDim(1, len), HEADS).prepare();
        exact = SmallModels.transformerBlock(Tensor.randn(7, 1, seq, DIM).to(device).realize(), HEADS).prepare();
        vars = Map.of("seq", (long) seq);
        ladder = BucketedCompileCache.powerOfTwoLadder(Session.on(device), 8, MAX);
        tokens = Map.of("x", Tensor.randn(8, 1, seq, DIM).toFloatArray());
        ladder.runPadded(seq, tokens, ActiveExtentBench::graph);
    }

    private static Graph graph(int upper) {
        Graph g = new Graph();
        Tensor x = g.input("x", DType.F32, Shape.symbolic(1, new Variable("seq", 1, upper), DIM));
        return g.outputs(SmallModels.transformerBlock(x, HEADS));
    }

    @Benchmark
    public Object padded() { return ladder.runPadded(seq, tokens, ActiveExtentBench::graph); }

    @Benchmark
    public void symbolic() { symbolic.executeWithVars(vars); }

    @Benchmark
    public void exact() { exact.execute(); }

    @TearDown(Level.Trial)
    public void close() {
        symbolic.close();
        exact.close();
        ladder.close();
    }
}
