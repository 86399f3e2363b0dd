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
 * {@code exp} of {@code n} f32 values in [-20, 20] (softmax, sigmoid and GELU are built on it): Kiln's
 * compiled kernel beside a plain Java loop of {@code (float) Math.exp(x)} on one thread.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class ExpBench {
    @Param("CPU")
    public String device;

    @Param("1048576")
    public int n;

    private ExecutionPlan plan;
    private float[] in, out;

    @Setup(Level.Trial)
    public void prepare() {
        Tensor x = Tensor.rand(4, n).mul(40).sub(20).to(device).realize();
        in = x.toFloatArray();
        out = new float[n];
        plan = x.exp().prepare();
    }

    @Benchmark
    public void kilnExp() { plan.execute(); }

    @Benchmark
    public float[] javaMathExp() {
        for (int i = 0; i < n; i++) out[i] = (float) Math.exp(in[i]);
        return out;
    }

    @TearDown(Level.Trial)
    public void close() { plan.close(); }
}
