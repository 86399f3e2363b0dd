package dev.kiln.bench;

import dev.kiln.types.DType;
import dev.kiln.Tensor;
import dev.kiln.serve.CompiledGraph;
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
import org.openjdk.jmh.infra.Blackhole;

import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The serving API's overhead on a small MLP (x[1, 64] -> 128 relu -> 10): the plan alone
 * ({@code ExecutionPlan.execute()} with the inputs already in place), {@code runSlots} (copy the input
 * in, run, copy the outputs into the arena) and {@code run} with maps (validate names, copy in, run,
 * return new arrays). The differences are the API's cost per call.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class ServingBench {
    @Param("CPU")
    public String device;

    private CompiledGraph graph;
    private float[][] slots;
    private Map<String, float[]> inputs;

    private static float[] data(int n, int seed) {
        float[] out = new float[n];
        for (int i = 0; i < n; i++) out[i] = (float) Math.sin(seed * 7.31 + i * 1.713);
        return out;
    }

    @Setup(Level.Trial)
    public void compile() {
        Graph g = new Graph();
        Tensor x = g.input("x", DType.F32, 1, 64);
        Tensor w1 = g.param("w1", DType.F32, 64, 128);
        Tensor b1 = g.param("b1", DType.F32, 128);
        Tensor w2 = g.param("w2", DType.F32, 128, 10);
        g.outputs(x.matmul(w1).add(b1).relu().matmul(w2));
        graph = Session.on(device).compile(g);
        graph.setParam("w1", data(64 * 128, 1));
        graph.setParam("b1", data(128, 2));
        graph.setParam("w2", data(128 * 10, 3));
        slots = new float[][] {data(64, 4)};
        inputs = Map.of("x", slots[0]);
        graph.runSlots(slots);
    }

    @Benchmark
    public void planExecute() { graph.plan().execute(); }

    @Benchmark
    public long runSlots() { return graph.runSlots(slots).offset(0); }

    @Benchmark
    public void runMap(Blackhole bh) {
        List<float[]> out = graph.run(inputs);
        bh.consume(out);
    }

    @TearDown(Level.Trial)
    public void close() { graph.close(); }
}
